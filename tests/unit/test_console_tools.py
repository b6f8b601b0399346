"""Console tools over the fake opener: keys, strip_ansi (real ESP32 log), detect_baud against a device
that only speaks text at its true rate, and XMODEM/YMODEM against simulated bootloader peers."""

from __future__ import annotations

import asyncio
import base64
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from serial_mcp.core.baud import simulate_garble
from serial_mcp.core.xmodem import XmodemReceiver, XmodemSender, YmodemReceiver
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeDevice, FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from tests.tool_calls import call

pytestmark = pytest.mark.anyio
ESP32_LOG = Path(__file__).parents[1] / "data" / "bootlogs" / "esp32" / "esp32-mdf-boot.txt"


@pytest.fixture
async def env() -> AsyncIterator[tuple[Client, FakeOpener]]:
    opener = FakeOpener()
    async with Client(build_server(ConnectionManager(opener))) as c:
        yield c, opener


@pytest.mark.slow
async def test_keys_are_sent_after_data(env: tuple[Client, FakeOpener]) -> None:
    c, opener = env
    dev = opener.add("tty")
    cid = (await call(c, "open", {"port": "tty"}))["connection_id"]
    await call(c, "write", {"connection_id": cid, "data": "top", "keys": ["enter"]})
    await call(c, "write", {"connection_id": cid, "keys": ["ctrl-c", "up", "esc", "f1"]})
    assert bytes(dev.written) == b"top\r" + b"\x03\x1b[A\x1b" + b"\x1bOP"
    bad = await c.call_tool("write", {"connection_id": cid, "keys": ["ctrl-cc"]})
    assert bad.is_error and "ctrl-c" in bad.structured_content["error"]["message"]


@pytest.mark.slow
async def test_strip_ansi_on_the_real_esp32_boot_log(env: tuple[Client, FakeOpener]) -> None:
    c, opener = env
    dev = opener.add("esp32")
    raw = ESP32_LOG.read_bytes()
    cid = (await call(c, "open", {"port": "esp32", "rx_buffer_size": 1 << 20}))["connection_id"]
    dev.feed(raw)
    r = await call(
        c,
        "read",
        {
            "connection_id": cid,
            "max_bytes": len(raw),
            "timeout_ms": 5000,
            "strip_ansi": True,
            "encoding": "hex",
        },
    )
    text = bytes.fromhex(r["data"]) if r["encoding"] == "hex" else r["data"].encode()
    assert b"\x1b" not in text and r["ansi_stripped"] > 100
    assert b"I (" in text and r["next_offset"] == len(raw)


@pytest.mark.slow
async def test_detect_baud_finds_the_rate_the_device_speaks(env: tuple[Client, FakeOpener]) -> None:
    c, opener = env
    banner = b"ESP-ROM:esp32s3-20210327\r\nBuild:Mar 27 2021\r\nrst:0x1 (POWERON),boot:0x8 (SPI_FAST_FLASH_BOOT)\r\n"
    dev = opener.add("board")

    def answer(data: bytes) -> bytes:
        configured = dev.settings_history[-1].baud_rate
        return simulate_garble(banner, 57600, configured, seed=configured)

    dev.responder = answer
    cid = (await call(c, "open", {"port": "board", "baud_rate": 9600}))["connection_id"]
    r = await call(
        c,
        "detect_baud",
        {"connection_id": cid, "candidates": [9600, 19200, 57600, 115200], "probe": "\r", "window_ms": 300},
    )
    assert r["conclusive"] and r["best"] == 57600
    assert r["restored_baud_rate"] == 9600 and dev.settings_history[-1].baud_rate == 9600


@pytest.mark.slow
async def test_detect_baud_is_inconclusive_on_a_silent_device(env: tuple[Client, FakeOpener]) -> None:
    c, opener = env
    opener.add("silent")
    cid = (await call(c, "open", {"port": "silent"}))["connection_id"]
    r = await call(c, "detect_baud", {"connection_id": cid, "candidates": [9600, 115200], "window_ms": 50})
    assert r["conclusive"] is False and r["best"] is None and r["reason"]


@pytest.mark.parametrize("protocol", ["xmodem", "xmodem_crc", "xmodem_1k"])
async def test_xmodem_send_to_a_simulated_bootloader(env: tuple[Client, FakeOpener], protocol: str) -> None:
    c, opener = env
    firmware = random.Random(1).randbytes(3000)
    receiver = XmodemReceiver("checksum" if protocol == "xmodem" else "crc", size=len(firmware))
    dev = opener.add("boot")
    dev.responder = lambda data: (receiver.receive_bytes(data), receiver.next_output())[1] or None
    cid = (await call(c, "open", {"port": "boot"}))["connection_id"]

    async def keep_asking() -> None:  # a real receiver repeats its start byte until the first block
        while receiver.result is None and not dev.written:
            dev.feed(receiver.next_output() or (b"C" if protocol != "xmodem" else b"\x15"))
            await asyncio.sleep(0.05)

    task = asyncio.create_task(keep_asking())
    r = await call(
        c,
        "file_transfer",
        {
            "connection_id": cid,
            "direction": "send",
            "protocol": protocol,
            "data": base64.b64encode(firmware).decode(),
        },
    )
    await task
    assert r["ok"] and r["bytes"] >= len(firmware)
    assert receiver.result is not None and receiver.result.ok
    assert receiver.result.files[0].data[: len(firmware)] == firmware


async def test_xmodem_receive_from_a_simulated_sender(env: tuple[Client, FakeOpener]) -> None:
    c, opener = env
    log = b"core dump " * 500
    sender = XmodemSender(log, "crc")
    dev = opener.add("dump")
    dev.responder = lambda data: (sender.receive_bytes(data), sender.next_output())[1] or None
    cid = (await call(c, "open", {"port": "dump"}))["connection_id"]
    r = await call(
        c, "file_transfer", {"connection_id": cid, "direction": "receive", "protocol": "xmodem_crc"}
    )
    assert r["ok"], r
    got = base64.b64decode(r["data"])
    assert got.rstrip(b"\x1a") == log


async def test_ymodem_send_carries_name_and_size(env: tuple[Client, FakeOpener]) -> None:
    c, opener = env
    data = b"hello bootloader\n" * 100
    receiver = YmodemReceiver()
    dev: FakeDevice = opener.add("y")
    dev.responder = lambda d: (receiver.receive_bytes(d), receiver.next_output())[1] or None
    cid = (await call(c, "open", {"port": "y"}))["connection_id"]

    async def keep_asking() -> None:
        while not dev.written:
            dev.feed(receiver.next_output() or b"C")
            await asyncio.sleep(0.05)

    task = asyncio.create_task(keep_asking())
    r = await call(
        c,
        "file_transfer",
        {
            "connection_id": cid,
            "direction": "send",
            "protocol": "ymodem",
            "data": base64.b64encode(data).decode(),
            "filename": "app.bin",
        },
    )
    await task
    assert r["ok"]
    assert receiver.result is not None and receiver.result.files[0].name == "app.bin"
    assert receiver.result.files[0].data == data


@pytest.mark.slow
async def test_rs485_transact_skips_its_own_echo(env: tuple[Client, FakeOpener]) -> None:
    c, opener = env
    opener.add("bus", lambda data: data + b"\r\nOK\r\n")  # a half-duplex transceiver hears us first
    cid = (await call(c, "open", {"port": "bus", "rs485": {"rts_level_for_tx": True}}))["connection_id"]
    r = await call(c, "transact", {"connection_id": cid, "data": "AT\r", "match": "OK\r\n"})
    assert r["read"]["data"] == "\r\nOK\r\n" and r["read"]["from_offset"] == 3
    r = await call(
        c, "transact", {"connection_id": cid, "data": "AT\r", "match": "OK\r\n", "read_echo": True}
    )
    assert r["read"]["data"] == "AT\r\r\nOK\r\n"


@pytest.mark.slow
async def test_screen_renders_a_full_screen_tui_across_reads(env: tuple[Client, FakeOpener]) -> None:
    c, opener = env
    dev = opener.add("tui")
    cid = (await call(c, "open", {"port": "tui"}))["connection_id"]
    dev.feed(b"\x1b[2J\x1b[H\x1b[1;37;44m Main Menu \x1b[0m\r\n\x1b[3;5H1) Boot\x1b[4;5H2) Update")
    r = await call(
        c,
        "read",
        {"connection_id": cid, "screen": {"cols": 40, "rows": 10}, "idle_ms": 50, "timeout_ms": 5000},
    )
    assert r["screen"][0].strip() == "Main Menu"
    assert r["screen"][2] == "    1) Boot" and r["screen"][3] == "    2) Update"
    dev.feed(b"\x1b[4;5H\x1b[7m2) Update\x1b[0m\x1b[10;1HSelect:")  # the next frame draws on the same screen
    r = await call(
        c,
        "read",
        {"connection_id": cid, "screen": {"cols": 40, "rows": 10}, "idle_ms": 50, "timeout_ms": 5000},
    )
    assert r["screen"][2] == "    1) Boot" and r["screen"][9] == "Select:"
    bad = await c.call_tool("read", {"connection_id": cid, "screen": {"cols": 5000}})
    assert bad.is_error
