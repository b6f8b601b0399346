"""Console extras on real PTYs: respond-on-match interrupts a simulated bootloader in time."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator

import pytest
from mcp import Client

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.system_open import SystemOpener
from tests.pty.devices import PtyDevice, echo
from tests.tool_calls import call

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


class Bootloader:
    """Prints a countdown banner, then waits 1 s for a key: a key → prompt, else boots the kernel.
    It records what happened as an event order, so the test needs no clock of its own."""

    def __init__(self) -> None:
        self.key = threading.Event()
        self.outcome: str | None = None
        self.dev = PtyDevice(self._on_host_bytes)

    def _on_host_bytes(self, data: bytes) -> bytes | None:
        self.key.set()
        return None

    def boot(self) -> None:
        self.dev.send(b"U-Boot 2023.01\r\nDRAM: 512 MiB\r\nHit any key to stop autoboot:  1 ")
        if self.key.wait(1.0):
            self.outcome = "interrupted"
            self.dev.send(b"\r\n=> ")
        else:
            self.outcome = "booted"
            self.dev.send(b"\r\nStarting kernel ...\r\n")


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    async with Client(build_server(ConnectionManager(SystemOpener()))) as c:
        yield c


async def test_respond_on_match_stops_autoboot_in_time(client: Client) -> None:
    boot = Bootloader()
    boot.dev.start()
    try:
        cid = (await call(client, "open", {"port": boot.dev.path}))["connection_id"]
        threading.Thread(target=boot.boot, daemon=True).start()
        r = await call(
            client,
            "read",
            {
                "connection_id": cid,
                "match": "=> ",
                "timeout_ms": 10_000,
                "respond": {"on": "Hit any key to stop autoboot", "send": " "},
            },
        )
        assert boot.outcome == "interrupted", "the key must arrive inside the bootloader's 1 s window"
        assert r["matched"] and r["responded"] == 1 and r["data"].endswith("=> ")
        assert bytes(boot.dev.received) == b" "
        log = await call(client, "get_log", {"connection_id": cid})
        tx = [e for e in log["events"] if e["type"] == "tx"]
        assert tx and tx[0]["respond"] is True and tx[0]["data"] == " "
    finally:
        boot.dev.close()


async def test_without_respond_the_board_boots(client: Client) -> None:
    boot = Bootloader()
    boot.dev.start()
    try:
        cid = (await call(client, "open", {"port": boot.dev.path}))["connection_id"]
        threading.Thread(target=boot.boot, daemon=True).start()
        r = await call(client, "read", {"connection_id": cid, "match": "kernel", "timeout_ms": 10_000})
        assert r["matched"] and boot.outcome == "booted"
    finally:
        boot.dev.close()


async def test_respond_pages_through_a_pager_with_transact(client: Client) -> None:
    pages = [b"page 1 --More--", b"\r\npage 2 --More--", b"\r\npage 3 end"]

    def pager(data: bytes) -> bytes | None:
        if data == b"show log\r" or data == b" ":
            return pages.pop(0) if pages else None
        return None

    dev = PtyDevice(pager).start()
    try:
        cid = (await call(client, "open", {"port": dev.path}))["connection_id"]
        bad = await client.call_tool("read", {"connection_id": cid, "respond": {"on": "x"}})
        assert bad.is_error and bad.structured_content["error"]["code"] == "invalid_argument"
        r = await call(
            client,
            "transact",
            {
                "connection_id": cid,
                "data": "show log\r",
                "match": "end",
                "timeout_ms": 10_000,
                "respond": {"on": "--More--", "send": "20", "encoding": "hex", "times": 5},
            },
        )
        assert r["read"]["matched"] and r["read"]["responded"] == 2
        assert bytes(dev.received) == b"show log\r  "
    finally:
        dev.close()


async def test_mirror_ro_shows_the_device_to_a_person(client: Client) -> None:
    import serial

    dev = PtyDevice().start()
    try:
        opened = await call(client, "open", {"port": dev.path, "mirror": "ro"})
        assert opened["mirror"] and opened["mirror"].startswith("/dev/")
        with serial.Serial(opened["mirror"], 115200, timeout=10) as person:
            dev.send(b"kernel: eth0 link up\r\n")
            assert person.read_until(b"\r\n") == b"kernel: eth0 link up\r\n"
            person.write(b"typed in ro mode\r")
            r = await call(
                client,
                "read",
                {"connection_id": opened["connection_id"], "match": "\r\n", "timeout_ms": 5000},
            )
            assert r["data"] == "kernel: eth0 link up\r\n", "the agent's cursor still gets everything"
        await call(client, "close", {"connection_id": opened["connection_id"]})
        assert bytes(dev.received) == b"", "ro: nothing the person typed reached the device"
    finally:
        dev.close()


async def test_mirror_rw_forwards_typing_and_logs_it(client: Client) -> None:
    import serial

    dev = PtyDevice(echo).start()
    try:
        opened = await call(client, "open", {"port": dev.path, "mirror": "rw"})
        cid = opened["connection_id"]
        with serial.Serial(opened["mirror"], 115200, timeout=10) as person:
            person.write(b"reboot\r")
            assert person.read_until(b"\r") == b"reboot\r"  # the device echoed it back to both
        r = await call(client, "read", {"connection_id": cid, "match": "\r", "timeout_ms": 5000})
        assert r["data"] == "reboot\r"
        log = await call(client, "get_log", {"connection_id": cid})
        tx = [e for e in log["events"] if e["type"] == "tx"]
        assert tx and tx[0]["source"] == "mirror" and tx[0]["data"] == "reboot\r"
        bad = await client.call_tool("open", {"port": dev.path, "mirror": "yes"})
        assert bad.is_error
    finally:
        dev.close()


async def test_rs485_and_low_latency_report_what_the_driver_allows(client: Client) -> None:
    dev = PtyDevice(echo).start()
    try:
        e = await client.call_tool("open", {"port": dev.path, "rs485": {"rts_level_for_tx": True}})
        assert e.is_error and e.structured_content["error"]["code"] == "rs485_unsupported"
        bad = await client.call_tool("open", {"port": dev.path, "rs485": {"rts_for_tx": True}})
        assert bad.is_error and bad.structured_content["error"]["code"] == "invalid_argument"
        opened = await call(client, "open", {"port": dev.path, "low_latency": True})
        status = await call(client, "get_status", {"connection_id": opened["connection_id"]})
        assert status["low_latency"] is False, (
            "a PTY has no ASYNC_LOW_LATENCY: said so, and the port still works"
        )
        r = await call(
            client, "transact", {"connection_id": opened["connection_id"], "data": "ok\n", "match": "\n"}
        )
        assert r["read"]["data"] == "ok\n"
    finally:
        dev.close()
