"""Issue 37.5: a read ends on the answer, not on a pause.

A transact that names no stop waits for the reply (an AT command's final result code, or a quiet long
enough for a real device after a byte that is not the echo); ``max_frames=N`` without ``idle_ms`` waits
for N frames; ``match``, ``until``, an explicit ``idle_ms`` and a final-aware parser keep their meaning.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from serial_mcp import Engine
from serial_mcp.serial.fake import FakeDevice, FakeOpener
from serial_mcp.serial.reply_wait import ReplyWatch, is_at_command

pytestmark = pytest.mark.anyio

GAP_S = 0.2  # longer than a plain read's 100 ms idle, well within a transact's reply quiet


def later(device: FakeDevice, chunks: list[bytes]) -> None:
    """The device sends ``chunks`` one after another, GAP_S apart (on a timer: a device's own pace)."""
    if not chunks:
        return

    def send() -> None:
        device.feed(chunks[0])
        later(device, chunks[1:])

    timer = threading.Timer(GAP_S, send)
    timer.daemon = True
    timer.start()


def echo_then(reply: bytes) -> Callable[[FakeDevice], Callable[[bytes], bytes | None]]:
    """A console that echoes a command at once and answers it GAP_S later (``reply`` empty: never)."""

    def make(device: FakeDevice) -> Callable[[bytes], bytes | None]:
        def respond(data: bytes) -> bytes:
            if reply:
                later(device, [reply])
            return data

        return respond

    return make


async def _console(reply: bytes) -> tuple[Engine, FakeDevice]:
    opener = FakeOpener()
    device = opener.add("dev")
    device.responder = echo_then(reply)(device)
    return Engine(opener=opener), device


async def test_transact_ati_on_the_slow_modem_returns_the_final_ok() -> None:
    """The issue's done-when: today the read ended 100 ms after the echo, before the reply."""
    async with Engine() as engine:
        conn = await engine.open("sim://slow-modem")
        await conn.read(match="RDY", timeout_ms=2000)
        r = await conn.transact("ATI\r")
        assert r.read.stop_reason == "final", r.summary()
        assert r.read.data.startswith("ATI\r") and "Model: SM-150" in r.read.data
        assert r.read.data.endswith("\r\nOK\r\n"), r.read.data
        assert "stop=final" in r.summary()  # what ended the read is in the text
        csq = await conn.transact("AT+CSQ\r")  # a URC and 100 ms inside the reply: still up to OK
        assert csq.read.data.endswith("+CREG: 1\r\n\r\nOK\r\n") and csq.read.stop_reason == "final"


async def test_a_reply_after_the_echo_is_waited_for() -> None:
    engine, _ = await _console(b"help: ls cd cat\r\n$ ")
    async with engine:
        conn = await engine.open("dev")
        r = await conn.transact("help\r", timeout_ms=3000)
        assert r.read.data == "help\rhelp: ls cd cat\r\n$ ", r.summary()
        assert r.read.stop_reason == "idle" and "stop=idle" in r.summary()


async def test_an_echo_alone_is_not_a_reply() -> None:
    engine, _ = await _console(b"")
    async with engine:
        conn = await engine.open("dev")
        r = await conn.transact("help\r", timeout_ms=400)
        assert r.read.data == "help\r" and r.read.stop_reason == "timeout", r.summary()


async def test_an_explicit_idle_ms_keeps_its_meaning() -> None:
    engine, _ = await _console(b"help: ls cd cat\r\n")
    async with engine:
        conn = await engine.open("dev")
        r = await conn.transact("help\r", idle_ms=50, timeout_ms=3000)
        assert r.read.data == "help\r" and r.read.stop_reason == "idle"
        rest = await conn.read(match="cat", timeout_ms=3000)  # the reply came after all
        assert rest.data.endswith("cat")


async def test_a_packet_protocols_reply_is_its_first_frame_past_the_echo() -> None:
    """SLIP on a line that echoes (a half-duplex bus, a loopback adapter): the echo of the request
    is a frame too; the reply is the frame after it, and the read ends on it, not on a pause."""
    engine, _ = await _console(b"\xc0pong\xc0")
    async with engine:
        conn = await engine.open("dev", protocol="slip")
        r = await conn.transact("ping", timeout_ms=3000)
        assert r.read.frames is not None and [f.data for f in r.read.frames] == ["ping", "pong"], r.summary()
        assert r.read.stop_reason == "final" and "stop=final" in r.summary()


async def test_max_frames_waits_for_its_frames() -> None:
    """A device sending a line every GAP_S: read(max_frames=3) gets three lines, not the first one."""
    opener = FakeOpener()
    device = opener.add("dev")
    async with Engine(opener=opener) as engine:
        conn = await engine.open("dev")
        later(device, [b"$GPGGA,1\r\n", b"$GPGGA,2\r\n", b"$GPGGA,3\r\n", b"$GPGGA,4\r\n"])
        r = await conn.read(max_frames=3, timeout_ms=5000)
        assert r.frames is not None and [f.data for f in r.frames] == ["$GPGGA,1", "$GPGGA,2", "$GPGGA,3"]
        assert r.stop_reason == "max_frames" and "stop=max_frames" in r.summary()


def test_the_reply_watch_tells_the_echo_from_the_reply_and_finds_the_final() -> None:
    watch = ReplyWatch(b"AT+CSQ\r")
    assert not watch.see(b"AT+C") and not watch.see(b"AT+CSQ\r")
    assert watch.see(b"AT+CSQ\r\r")
    data = b"AT+CSQ\r\r\n+CSQ: 23,99\r\n\r\n+CREG: 1\r\n\r\nOK"
    assert watch.final_end(data) is None  # "OK" without its line end is not a line yet
    data += b"\r\n\r\nRING\r\n"
    assert watch.final_end(data) == data.index(b"OK") + 4
    assert ReplyWatch(b"hello").see(b"x")  # not an echo: the reply has begun
    assert is_at_command(b"at+cgmr\r") and not is_at_command(b"AT+CGMR") and not is_at_command(b"help\r")
