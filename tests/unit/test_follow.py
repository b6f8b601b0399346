"""Following a USB board across re-enumeration, with the port enumerator injected (issue 23.3).

The board drops off the bus and comes back as another node (ttyACM0 -> ttyACM1): the connection
finds it by its serial number and says so in get_status, the event log and the capture. Another
board on the old node (another serial number) is never taken.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import anyio
import pytest
from mcp import Client

from serial_mcp.core.port_info import PortInfo
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.store.captures import CaptureStore
from tests.tool_calls import call

pytestmark = pytest.mark.anyio

FAST = {"initial_delay_ms": 5, "max_delay_ms": 20, "max_attempts": 0}
BOARD = PortInfo(
    name="/dev/ttyACM0", description="ESP32-S3", hwid=None, vid="303a", pid="1001",
    serial_number="7C:DF:A1:00:11:22", manufacturer="Espressif", product="USB JTAG/serial debug unit",
    interface=None, location="1-1.2:1.0", transport="usb",
)  # fmt: skip


@dataclass
class Bus:
    """The injected enumerator: what ``list_ports`` sees now; ``listed`` counts its scans."""

    ports: list[PortInfo] = field(default_factory=list)
    scans: int = 0
    scanned: threading.Condition = field(default_factory=threading.Condition)

    def __call__(self) -> list[PortInfo]:
        with self.scanned:
            self.scans += 1
            self.scanned.notify_all()
            return list(self.ports)

    def wait_scans(self, n: int) -> bool:
        with self.scanned:
            target = self.scans + n
            return self.scanned.wait_for(lambda: self.scans >= target, timeout=30)


async def wait_state(conn: Connection, state: str) -> None:
    with anyio.fail_after(30):
        while conn.state != state:
            await conn.wait_change(30)


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[tuple[Client, ConnectionManager, FakeOpener, Bus]]:
    opener = FakeOpener()
    opener.add("/dev/ttyACM0")
    bus = Bus([BOARD])
    manager = ConnectionManager(opener)
    captures = CaptureStore(tmp_path)
    async with Client(build_server(manager, port_lister=bus, captures=captures)) as c:
        yield c, manager, opener, bus


async def test_a_board_that_comes_back_under_another_node_is_followed(
    env: tuple[Client, ConnectionManager, FakeOpener, Bus], tmp_path: Path
) -> None:
    c, manager, opener, bus = env
    opened = await call(c, "open", {"port": "/dev/ttyACM0", "reconnect": FAST, "record": "s3.jsonl"})
    cid = opened["connection_id"]
    conn = manager.get(cid)
    status = await call(c, "get_status", {"connection_id": cid})
    assert status["follows"] == "usb 303a:1001 serial 7C:DF:A1:00:11:22"
    old = opener.devices["/dev/ttyACM0"]
    old.feed(b"before reset\n")
    await call(c, "read", {"connection_id": cid, "match": "\n", "timeout_ms": 5000})

    bus.ports = []  # it resets: off the bus ...
    old.unplug()
    await wait_state(conn, "reconnecting")
    assert await anyio.to_thread.run_sync(bus.wait_scans, 2)
    assert "not on the bus" in (await call(c, "get_status", {"connection_id": cid}))["last_error"]
    new = opener.add("/dev/ttyACM1")  # ... and back as ttyACM1
    bus.ports = [replace(BOARD, name="/dev/ttyACM1")]
    await wait_state(conn, "open")
    new.feed(b"boot log\n")
    r = await call(c, "read", {"connection_id": cid, "match": "\n", "timeout_ms": 5000})
    assert r["data"] == "boot log\n" and r["from_offset"] == 13, "offsets carry on across the move"

    status = await call(c, "get_status", {"connection_id": cid})
    assert status["port"] == "/dev/ttyACM1" and status["state"] == "open"
    events = (await call(c, "get_log", {"connection_id": cid}))["events"]
    moved = [e for e in events if e["type"] == "moved"]
    assert moved and moved[0]["old"] == "/dev/ttyACM0" and moved[0]["new"] == "/dev/ttyACM1"
    assert [e["type"] for e in events if e["type"] in ("moved", "reconnect")] == ["moved", "reconnect"]
    await call(c, "record", {"connection_id": cid, "action": "stop"})
    lines = [json.loads(line) for line in (tmp_path / "s3.jsonl").read_text().splitlines()]
    assert any(e.get("label") == "moved" and e.get("new") == "/dev/ttyACM1" for e in lines), lines
    assert (await call(c, "list_connections", {}))["connections"][0]["port"] == "/dev/ttyACM1"


async def test_another_board_on_the_old_node_is_not_taken(
    env: tuple[Client, ConnectionManager, FakeOpener, Bus],
) -> None:
    c, manager, opener, bus = env
    cid = (await call(c, "open", {"port": "/dev/ttyACM0", "reconnect": FAST}))["connection_id"]
    conn = manager.get(cid)
    old = opener.devices["/dev/ttyACM0"]
    old.unplug()
    await wait_state(conn, "reconnecting")
    # another board (another serial number) turns up on the old node, and it can be opened
    bus.ports = [replace(BOARD, serial_number="OTHER-BOARD")]
    old.plug_in()
    assert await anyio.to_thread.run_sync(bus.wait_scans, 3), "reconnect kept looking"
    status = await call(c, "get_status", {"connection_id": cid})
    assert status["state"] == "reconnecting" and old.opens == 1, "the other board was not opened"
    assert "another device" in status["last_error"] and "OTHER-BOARD" in status["last_error"]
    # the bootloader of the same board (another USB ID) is not taken either
    bus.ports = [replace(BOARD, pid="0002")]
    assert await anyio.to_thread.run_sync(bus.wait_scans, 2)
    assert conn.state == "reconnecting" and old.opens == 1
    # the real one comes back under yet another node
    opener.add("/dev/ttyACM2")
    bus.ports = [replace(BOARD, serial_number="OTHER-BOARD"), replace(BOARD, name="/dev/ttyACM2")]
    await wait_state(conn, "open")
    assert conn.port == "/dev/ttyACM2" and old.opens == 1


async def test_a_device_without_an_identity_reopens_its_path(
    env: tuple[Client, ConnectionManager, FakeOpener, Bus],
) -> None:
    c, manager, opener, _bus = env
    dev = opener.add("/dev/ttyS0")
    cid = (await call(c, "open", {"port": "/dev/ttyS0", "reconnect": FAST}))["connection_id"]
    assert (await call(c, "get_status", {"connection_id": cid}))["follows"] is None
    dev.unplug()
    await wait_state(manager.get(cid), "reconnecting")
    dev.plug_in()
    await wait_state(manager.get(cid), "open")
    assert manager.get(cid).port == "/dev/ttyS0"


async def test_waiting_for_a_followed_board_is_bounded_by_the_policy_and_says_what_it_waited_for(
    env: tuple[Client, ConnectionManager, FakeOpener, Bus],
) -> None:
    c, manager, opener, bus = env
    policy = {"initial_delay_ms": 5, "max_delay_ms": 5, "max_attempts": 3}
    cid = (await call(c, "open", {"port": "/dev/ttyACM0", "reconnect": policy}))["connection_id"]
    bus.ports = []
    opener.devices["/dev/ttyACM0"].unplug()
    r = await call(c, "read", {"connection_id": cid, "timeout_ms": 60_000, "match": "never"})
    assert r["stop_reason"] == "disconnected"
    status = await call(c, "get_status", {"connection_id": cid})
    assert status["state"] == "disconnected" and status["reconnect_attempts"] == 3
    assert (
        "gave up" in status["last_error"] and "usb 303a:1001 serial 7C:DF:A1:00:11:22" in status["last_error"]
    )
    opener.add("/dev/ttyACM3")
    bus.ports = [replace(BOARD, name="/dev/ttyACM3")]
    assert (await call(c, "reconnect", {"connection_id": cid}))["state"] == "open"  # by hand, followed too
    assert manager.get(cid).port == "/dev/ttyACM3"


async def test_a_by_id_link_that_follows_the_device_is_kept(tmp_path: Path) -> None:
    """Opened through a stable symlink (``/dev/serial/by-id/...``): a reopen of the same node is not a move."""
    node = tmp_path / "ttyACM0"
    node.touch()
    link = tmp_path / "usb-Espressif_USB_JTAG_serial_debug_unit_7C:DF:A1:00:11:22-if00"
    link.symlink_to(node)
    opener = FakeOpener()
    dev = opener.add(str(link))
    bus = Bus([replace(BOARD, name=str(node))])
    manager = ConnectionManager(opener)
    async with Client(build_server(manager, port_lister=bus)) as c:
        cid = (await call(c, "open", {"port": str(link), "reconnect": FAST}))["connection_id"]
        assert (await call(c, "get_status", {"connection_id": cid}))["follows"] is not None
        dev.unplug()
        await wait_state(manager.get(cid), "reconnecting")
        dev.plug_in()
        await wait_state(manager.get(cid), "open")
        events = (await call(c, "get_log", {"connection_id": cid}))["events"]
        assert "moved" not in [e["type"] for e in events] and manager.get(cid).port == str(link)
