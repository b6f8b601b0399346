"""The RFC 2217 mirror (issue 23.1): a pyserial ``rfc2217://`` client gets a connection's real port
through serial-mcp, while every byte both ways stays in the ring and the log, the agent's writes
are refused with ``port_lent`` (unless forced) and standing responders are held."""

from __future__ import annotations

import os
import socket
import struct
import termios
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
import serial

from serial_mcp import Engine
from serial_mcp.core.capture import parse_capture
from serial_mcp.errors import SerialMcpError
from serial_mcp.serial.connection import Connection
from tests.pty.devices import PtyDevice, inner

pytestmark = [pytest.mark.anyio, pytest.mark.pty]
MIB = 1 << 20


def client(url: str, **kw: Any) -> serial.SerialBase:
    return serial.serial_for_url(url, baudrate=115200, timeout=10, **kw)


def read_exactly(port: serial.SerialBase, n: int) -> bytes:
    got = bytearray()
    while len(got) < n:
        chunk = port.read(n - len(got))
        if not chunk:
            break
        got += chunk
    return bytes(got)


def tty_speed(fd: int) -> int:
    return termios.tcgetattr(fd)[4]  # type: ignore[no-any-return]  # ispeed


def socket_fds() -> set[str]:
    out = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}").startswith("socket:"):
                out.add(name)
        except OSError:
            continue
    return out


def events(conn: Connection, kind: str | None = None, **match: Any) -> list[Any]:
    with conn.thread_lock:  # the mirror's thread appends meanwhile
        logged = conn.log.since(0)
    return [
        e for e in logged
        if (kind is None or e.type == kind) and all(e.fields.get(k) == v for k, v in match.items())
    ]  # fmt: skip


@pytest.mark.slow
async def test_a_pyserial_client_streams_1_mib_each_way_through_the_mirror(
    echo_dev: PtyDevice, tmp_path: Path
) -> None:
    payload = os.urandom(MIB)  # every byte value, 0xFF (Telnet's IAC) about 4096 times
    async with Engine(capture_dir=tmp_path) as eng:
        conn = await eng.open(echo_dev.path, mirror="rfc2217", rx_buffer_size=4 * MIB, record="s.jsonl")
        url = conn.opened.mirror_url
        assert url is not None and url.startswith("rfc2217://127.0.0.1:")

        def run() -> bytes:
            with client(url) as c:
                c.write(payload)
                return read_exactly(c, len(payload))

        got = await anyio.to_thread.run_sync(run)
        assert got == payload  # nothing lost, nothing reordered, IAC unescaped both ways
        assert bytes(echo_dev.received) == payload  # the device got exactly what the client sent
        c = inner(eng, conn.id)
        assert bytes(c.read_ring(0, None).data) == payload  # and the ring holds what it answered
        first = await conn.read(from_=0, max_bytes=16, encoding="hex", timeout_ms=0)
        assert first.data.replace(" ", "") == payload[:16].hex()  # readable through a cursor
        status = await conn.get_status()
        assert status.rfc2217 is not None and status.rfc2217["rx_forwarded"] == MIB
        assert status.rfc2217["rx_dropped"] == 0 and status.rfc2217["tx_forwarded"] == MIB
    capture = parse_capture((tmp_path / "s.jsonl").read_text().splitlines())
    assert capture.payload("tx") == payload and capture.payload("rx") == payload  # and recorded
    attach = [e for e in capture.events if e.fields.get("label") == "rfc2217 attach"]
    assert len(attach) == 1 and f"(pid {os.getpid()}) at 127.0.0.1:" in attach[0].fields["client"]


@pytest.mark.slow  # over a second: the full suite runs it, the fast lane does not
async def test_settings_reach_the_port_and_come_back_when_the_client_leaves(echo_dev: PtyDevice) -> None:
    async with Engine() as eng:
        conn = await eng.open(echo_dev.path, mirror="rfc2217")
        url = conn.opened.mirror_url or ""
        c = inner(eng, conn.id)
        port = serial.serial_for_url(url, baudrate=115200, timeout=10)
        try:
            await anyio.to_thread.run_sync(lambda: setattr(port, "baudrate", 57600))
            await anyio.to_thread.run_sync(lambda: setattr(port, "parity", serial.PARITY_ODD))
            await anyio.to_thread.run_sync(lambda: setattr(port, "stopbits", serial.STOPBITS_TWO))
            assert tty_speed(echo_dev.master) == termios.B57600  # the real port changed
            cflag = termios.tcgetattr(echo_dev.master)[2]
            assert cflag & termios.CSTOPB  # (a PTY keeps no parity bit: that is checked in the log)
            with pytest.raises(ValueError):  # a PTY refuses 7 data bits: the client is told so
                await anyio.to_thread.run_sync(lambda: setattr(port, "bytesize", serial.SEVENBITS))
            assert c.settings.baud_rate == 115200  # the connection's own settings are its own
            changes = events(c, "config", source="rfc2217")
            assert [e.fields["settings"]["baud_rate"] for e in changes] == [57600, 57600, 57600]
            assert changes[-1].fields["settings"]["parity"] == "odd"
        finally:
            await anyio.to_thread.run_sync(port.close)
        with anyio.fail_after(10):
            while c.lent_to is not None:  # the server thread sees the client go
                await c.wait_change(0.05)
        assert tty_speed(echo_dev.master) == termios.B115200  # its settings came back
        assert not termios.tcgetattr(echo_dev.master)[2] & termios.CSTOPB
        assert events(c, "config", restored=True)
        assert events(c, "marker", label="rfc2217 detach")[0].fields["reason"] == "client left"


WRITING_CALLS: dict[str, dict[str, Any]] = {
    "write": {"data": "x"},
    "transact": {"data": "x", "timeout_ms": 10},
    "flush": {},
    "capture_boot": {"reset": {"dtr": False, "rts": True}, "timeout_ms": 10},
    "set_dtr_rts": {"dtr": False},
    "send_break": {"duration_ms": 1},
    "set_flow_control": {"flow_control": "none"},
    "reconfigure": {"baud_rate": 9600},
    "detect_baud": {"candidates": [9600]},
    "file_transfer": {"direction": "send", "data": "x"},
}


async def test_while_lent_every_writing_tool_says_port_lent_unless_forced(echo_dev: PtyDevice) -> None:
    from serial_mcp.engine.operations import OPERATIONS, REFUSED_WHILE_LENT, UNFORCEABLE_WHILE_LENT

    assert set(WRITING_CALLS) == REFUSED_WHILE_LENT
    # every row that drives the device is held back while lent; the rest only change stored profiles
    # (configure is checked by its settings, below)
    mutating = {op.name for op in OPERATIONS if op.hints.mutates}
    stored_only = {"save_profile", "rollback_profile", "delete_profile", "configure"}
    assert mutating == REFUSED_WHILE_LENT | UNFORCEABLE_WHILE_LENT | stored_only
    async with Engine() as eng:
        conn = await eng.open(echo_dev.path, mirror="rfc2217")
        port = await anyio.to_thread.run_sync(client, conn.opened.mirror_url or "")
        try:
            name = inner(eng, conn.id).lent_to
            assert name is not None and f"(pid {os.getpid()}) at 127.0.0.1:" in name  # the client, named
            for tool, args in WRITING_CALLS.items():
                with pytest.raises(SerialMcpError) as refused:
                    await getattr(conn, tool)(**args)
                assert refused.value.code == "port_lent", tool
                assert name in refused.value.message and "force=true" in refused.value.message
            with pytest.raises(SerialMcpError) as refused:
                await eng.configure({"baud_rate": 9600}, connection_id=conn.id)
            assert refused.value.code == "port_lent" and "reconfigure(force=true)" in refused.value.message
            for refuse in (conn.reconnect, conn.release):  # the client's OS handle: not even forced
                with pytest.raises(SerialMcpError) as refused:
                    await refuse()
                assert refused.value.code == "port_lent" and "close the client first" in refused.value.message
            assert (await conn.lend("status")).state == "open"  # looking is fine
            assert bytes(echo_dev.received) == b""  # nothing of ours reached the device
            assert (await conn.write("forced", force=True)).bytes_written == 6
            assert await anyio.to_thread.run_sync(read_exactly, port, 6) == b"forced"  # its echo
        finally:
            await anyio.to_thread.run_sync(port.close)
        with anyio.fail_after(10):
            while inner(eng, conn.id).lent_to is not None:
                await inner(eng, conn.id).wait_change(0.05)
        assert (await conn.write("after")).bytes_written == 5  # the client left: ours again


async def test_standing_responders_are_held_while_lent() -> None:
    pongs: list[bytes] = []
    ponged = threading.Event()

    def board(data: bytes) -> bytes | None:
        if b"pong" in data:
            pongs.append(data)
            ponged.set()
        return b"ping\n" if b"go" in data else None

    dev = PtyDevice(board).start()
    try:
        async with Engine() as eng:
            conn = await eng.open(dev.path, mirror="rfc2217", respond=[{"on": "ping", "send": "pong"}])
            port = await anyio.to_thread.run_sync(client, conn.opened.mirror_url or "")
            try:
                await anyio.to_thread.run_sync(port.write, b"go")
                assert await anyio.to_thread.run_sync(read_exactly, port, 5) == b"ping\n"
                status = await conn.get_status()
                assert "responders held" in status.summary()
                attach = events(inner(eng, conn.id), "marker", label="rfc2217 attach")
                assert attach[0].fields["responders_held"] == 1
            finally:
                await anyio.to_thread.run_sync(port.close)
            c = inner(eng, conn.id)
            with anyio.fail_after(10):
                while c.lent_to is not None:
                    await c.wait_change(0.05)
            dev.send(b"ping\n")  # the client is gone: the rule answers again
            assert await anyio.to_thread.run_sync(ponged.wait, 10)
            assert len(pongs) == 1  # the ping while lent got no answer (it would have come first)
    finally:
        dev.close()


async def test_read_only_makes_the_mirror_receive_only(echo_dev: PtyDevice) -> None:
    async with Engine(read_only=True) as eng:
        conn = await eng.open(echo_dev.path, mirror="rfc2217")
        c = inner(eng, conn.id)
        port = await anyio.to_thread.run_sync(client, conn.opened.mirror_url or "")
        try:
            await anyio.to_thread.run_sync(port.write, b"\xff" * 10 + b"x" * 990)
            # a setting change after the data: acknowledged once the data was handled
            await anyio.to_thread.run_sync(lambda: setattr(port, "baudrate", 9600))
            await anyio.to_thread.run_sync(lambda: setattr(port, "dtr", False))
            assert port.baudrate == 9600  # the client was told yes (a refusal fails pyserial at open) ...
            assert tty_speed(echo_dev.master) == termios.B115200  # ... but nothing was applied
            status = await conn.get_status()
            assert status.rfc2217 is not None and status.rfc2217["tx_dropped"] == 1000
            assert status.rfc2217["tx_forwarded"] == 0 and status.rfc2217["read_only"] is True
            assert c.lent_to is None  # a receive-only client borrows nothing
            assert [e.fields["applied"] for e in events(c, "config", source="rfc2217")] == [False]
            echo_dev.send(b"seen\n")  # the device's bytes still reach the client
            assert await anyio.to_thread.run_sync(read_exactly, port, 5) == b"seen\n"
        finally:
            await anyio.to_thread.run_sync(port.close)
        assert bytes(echo_dev.received) == b""


async def test_bad_mirror_arguments_are_refused_and_change_nothing(echo_dev: PtyDevice) -> None:
    async with Engine() as eng:
        with pytest.raises(SerialMcpError) as bad:
            await eng.open(echo_dev.path, mirror="telnet")
        assert bad.value.code == "invalid_argument" and "'rfc2217'" in bad.value.message
        assert eng.connections().connections == []  # the port was not opened
        conn = await eng.open(echo_dev.path)
        assert conn.opened.mirror_url is None
        with pytest.raises(SerialMcpError) as bad:
            await eng.configure({"mirror": "rw"}, connection_id=conn.id)
        assert bad.value.code == "invalid_argument" and "null" in bad.value.message
        with pytest.raises(SerialMcpError) as bad:
            await eng.configure({"mirror": "rfc2217", "data_bits": 9}, connection_id=conn.id)
        assert bad.value.code == "invalid_argument"
        assert inner(eng, conn.id).rfc2217 is None  # checked before anything started
        with pytest.raises(SerialMcpError) as bad:
            await conn.write("x", force="yes")  # type: ignore[arg-type]
        assert bad.value.code == "invalid_argument"
        url = (await eng.configure({"mirror": "rfc2217"}, connection_id=conn.id)).mirror_url or ""
        for own in (url, url.replace("127.0.0.1", "localhost")):  # our own mirror, past its owner: no
            with pytest.raises(SerialMcpError) as refused:
                await eng.open(own)
            assert refused.value.code == "not_allowed" and conn.id in refused.value.message
        assert [c.connection_id for c in eng.connections().connections] == [conn.id]


async def test_configure_adds_and_removes_the_mirror_on_a_live_connection(echo_dev: PtyDevice) -> None:
    sockets = socket_fds()
    async with Engine() as eng:
        conn = await eng.open(echo_dev.path)
        added = await eng.configure({"mirror": "rfc2217"}, connection_id=conn.id)
        url = added.mirror_url
        assert url is not None and (await conn.get_status()).rfc2217["url"] == url  # type: ignore[index]

        def talk() -> bytes:
            with client(url) as c:
                c.write(b"hello")
                return read_exactly(c, 5)

        assert await anyio.to_thread.run_sync(talk) == b"hello"
        removed = await eng.configure({"mirror": None}, connection_id=conn.id)
        assert removed.mirror_url is None and inner(eng, conn.id).rfc2217 is None
        with pytest.raises(serial.SerialException):  # nobody listens there any more
            serial.serial_for_url(url, timeout=1)
        assert socket_fds() == sockets


def lent_to(conn: Any) -> str | None:
    return conn.lent_to  # type: ignore[no-any-return]


@pytest.mark.slow  # over a second: the full suite runs it, the fast lane does not
async def test_one_client_at_a_time_and_nothing_left_after_a_client_dies(echo_dev: PtyDevice) -> None:
    sockets = socket_fds()
    async with Engine() as eng:
        conn = await eng.open(echo_dev.path, mirror="rfc2217", rx_buffer_size=4 * MIB)
        c = inner(eng, conn.id)
        url = conn.opened.mirror_url or ""
        first = await anyio.to_thread.run_sync(client, url)
        try:
            with pytest.raises((serial.SerialException, OSError)):  # the second is turned away
                await anyio.to_thread.run_sync(lambda: serial.serial_for_url(url, timeout=1))
            assert c.rfc2217.refused == 1
        finally:
            await anyio.to_thread.run_sync(first.close)
        # a client that dies mid-stream: a raw socket, reset (RST) while the board floods it
        host, port = url.removeprefix("rfc2217://").split(":")
        raw = socket.create_connection((host, int(port)))
        with anyio.fail_after(10):
            while c.lent_to is None:
                await c.wait_change(0.05)
        raw.sendall(b"A" * 4096)
        echo_dev.send(os.urandom(256 * 1024))
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        raw.close()
        with anyio.fail_after(10):
            while lent_to(c) is not None:  # through a call: mypy keeps the loop above's narrowing
                await c.wait_change(0.05)
        reasons = [e.fields["reason"] for e in events(c, "marker", label="rfc2217 detach")]
        assert len(reasons) == 2
        assert (await conn.write("mine")).bytes_written == 4  # the port is ours again
    # closed with the connection: no socket left (the conftest checks the threads)
    assert socket_fds() == sockets


async def test_the_port_is_given_back_only_once_its_detach_is_logged(echo_dev: PtyDevice) -> None:
    """Whoever sees ``lent_to`` cleared (a caller about to write, a test) finds the detach marker already
    in the log: the port is given back last, after its settings are restored and the detach recorded."""
    async with Engine() as eng:
        conn = await eng.open(echo_dev.path, mirror="rfc2217")
        c = inner(eng, conn.id)
        first = await anyio.to_thread.run_sync(client, conn.opened.mirror_url or "")
        with anyio.fail_after(10):
            while c.lent_to is None:
                await c.wait_change(0.05)
        lent_when_logged: list[str | None] = []
        record = c.record

        def watching(kind: str, **fields: Any) -> Any:
            if fields.get("label") == "rfc2217 detach":
                lent_when_logged.append(c.lent_to)
            return record(kind, **fields)

        c.record = watching  # type: ignore[method-assign,assignment]
        await anyio.to_thread.run_sync(first.close)
        with anyio.fail_after(10):
            while lent_to(c) is not None:
                await c.wait_change(0.05)
        assert len(lent_when_logged) == 1
        assert lent_when_logged[0] is not None  # still lent while the detach was logged


async def test_the_mirror_ends_with_the_connection_while_a_client_is_attached(
    echo_dev: PtyDevice, tmp_path: Path
) -> None:
    sockets = socket_fds()
    async with Engine(capture_dir=tmp_path) as eng:
        conn = await eng.open(echo_dev.path, mirror="rfc2217", record="s.jsonl")
        port = await anyio.to_thread.run_sync(client, conn.opened.mirror_url or "")
        await conn.close()
        with pytest.raises(serial.SerialException):  # the client sees the end
            await anyio.to_thread.run_sync(port.read, 1)
        await anyio.to_thread.run_sync(port.close)
    assert socket_fds() == sockets
    # the capture says the client was cut off by the close, before the connection's own close
    capture = parse_capture((tmp_path / "s.jsonl").read_text().splitlines())
    labels = [e.fields.get("label") or e.type for e in capture.events if e.type in ("marker", "close")]
    assert labels[-2:] == ["rfc2217 detach", "close"], labels
    detach = next(e for e in capture.events if e.fields.get("label") == "rfc2217 detach")
    assert detach.fields["reason"] == "mirror closed"


@pytest.mark.slow  # over a second: the full suite runs it, the fast lane does not
async def test_dtr_rts_and_break_reach_the_port_in_order_with_the_data_and_their_timing() -> None:
    from serial_mcp.serial.fake import FakeDevice, FakeOpener

    opener = FakeOpener()
    opener.add("/dev/ttyFAKE0")
    dev = opener.devices["/dev/ttyFAKE0"]
    seen: list[tuple[str, bool, bytes]] = []  # each line change, with what the port had been sent by then

    def on_line(device: FakeDevice, name: str, level: bool) -> None:
        seen.append((name, level, bytes(device.written)))

    dev.on_line = on_line
    async with Engine(opener=opener) as eng:
        conn = await eng.open("/dev/ttyFAKE0", mirror="rfc2217")
        c = inner(eng, conn.id)

        def run() -> None:
            with client(conn.opened.mirror_url or "") as port:
                port.write(b"A")
                port.dtr = False
                port.write(b"B")
                port.rts = False
                port.break_condition = True
                time.sleep(0.3)  # the client's BREAK lasts 300 ms
                port.break_condition = False
                port.write(b"C")
                port.dtr = True

        await anyio.to_thread.run_sync(run)
        with anyio.fail_after(10):
            while c.lent_to is not None:
                await c.wait_change(0.05)
        assert [s for s in seen if s[2]] == [  # (the client's open set DTR and RTS before any data)
            ("dtr", False, b"A"), ("rts", False, b"AB"), ("break", True, b"AB"),
            ("break", False, b"AB"), ("dtr", True, b"ABC"),
        ]  # fmt: skip
        breaks = [t for t, name, _ in dev.line_events if name == "break"]
        assert breaks[1] - breaks[0] >= 0.3  # held as long as the client held it (never shorter)
        assert c.lines.dtr is True and c.lines.rts is False  # the connection knows the levels the client left
        logged = [(e.fields.get("dtr"), e.fields.get("rts")) for e in events(c, "control", source="rfc2217")]
        assert (False, None) in logged and (None, False) in logged
        assert [e.fields["on"] for e in events(c, "break", source="rfc2217")] == [True, False]
