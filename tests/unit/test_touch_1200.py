"""capture_boot's 1200-baud touch (Arduino native USB), with the opener and the enumerator faked
(issue 23.3): the touch opens the port at 1200 baud and drops DTR; the board leaves the bus, shows
up as its bootloader (another USB ID: not taken) and comes back as the sketch under another node,
and the capture reads the sketch's first output there."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import anyio
import pytest
from mcp import Client

from serial_mcp.core.port_info import PortInfo
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeDevice, FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from tests.tool_calls import call, error
from tests.unit.test_follow import FAST, Bus

pytestmark = pytest.mark.anyio

LEONARDO = PortInfo(
    name="/dev/ttyACM0", description="Arduino Leonardo", hwid=None, vid="2341", pid="8036",
    serial_number=None, manufacturer="Arduino LLC", product="Arduino Leonardo", interface=None,
    location="1-1.4:1.0", transport="usb",
)  # fmt: skip
BOOTLOADER = replace(LEONARDO, pid="0036", product="Arduino Leonardo bootloader")


@pytest.fixture
async def env() -> AsyncIterator[tuple[Client, FakeOpener, Bus]]:
    opener = FakeOpener()
    opener.add("/dev/ttyACM0")
    bus = Bus([LEONARDO])
    async with Client(build_server(ConnectionManager(opener), port_lister=bus)) as c:
        yield c, opener, bus


def jumps_to_bootloader(bus: Bus) -> object:
    """The board's USB stack: DTR dropped while the line is at 1200 baud -> the bootloader."""

    def on_line(dev: FakeDevice, name: str, level: bool) -> None:
        if name == "dtr" and not level and dev.settings_history[-1].baud_rate == 1200:
            bus.ports = [BOOTLOADER]  # on the same node, as another USB device

    return on_line


async def test_the_touch_resets_into_the_bootloader_and_follows_the_sketch_back(
    env: tuple[Client, FakeOpener, Bus],
) -> None:
    c, opener, bus = env
    board = opener.devices["/dev/ttyACM0"]
    board.on_line = jumps_to_bootloader(bus)  # type: ignore[assignment]
    cid = (await call(c, "open", {"port": "/dev/ttyACM0", "baud_rate": 115200, "reconnect": FAST}))[
        "connection_id"
    ]
    result: dict[str, object] = {}

    async def capture() -> None:
        result.update(
            await call(
                c,
                "capture_boot",
                {
                    "connection_id": cid,
                    "reset": {"kind": "1200bps_touch"},
                    "match": "ready",
                    "timeout_ms": 30_000,
                },
            )
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(capture)
        with anyio.fail_after(30):  # the touch happened: the bootloader is on the bus
            while bus.ports != [BOOTLOADER]:
                await anyio.to_thread.run_sync(bus.wait_scans, 1)
        assert await anyio.to_thread.run_sync(bus.wait_scans, 3), "reconnect keeps looking"
        assert board.opens == 2, "the bootloader on the old node was not opened"
        sketch = opener.add("/dev/ttyACM1")
        sketch.feed(b"sketch ready\r\n")
        bus.ports = [replace(LEONARDO, name="/dev/ttyACM1")]

    bauds = [s.baud_rate for s in board.settings_history]
    assert bauds == [115200, 1200], "opened at 1200 baud for the touch"
    assert [(n, lvl) for _, n, lvl in board.line_events] == [("dtr", False)]
    assert board.closed
    read = result["read"]
    assert isinstance(read, dict) and read["data"] == "sketch ready" and read["stop_reason"] == "match"
    assert result["mark_offset"] == 0
    status = await call(c, "get_status", {"connection_id": cid})
    assert status["port"] == "/dev/ttyACM1" and status["state"] == "open"
    assert status["follows"] == "usb 2341:8036 at 1-1.4:1.0"
    kinds = [
        e["type"] for e in (await call(c, "get_log", {"connection_id": cid}))["events"] if e["type"] != "rx"
    ]
    assert kinds == ["open", "marker", "touch_1200", "moved", "reconnect"], kinds


async def test_touch_arguments_are_refused_cleanly(env: tuple[Client, FakeOpener, Bus]) -> None:
    c, opener, _bus = env
    cid = (await call(c, "open", {"port": "/dev/ttyACM0"}))["connection_id"]
    for reset in ({"kind": "1200bps_touch", "dtr": False}, {"kind": "1200"}, {"kind": 3}, {"knd": "lines"}):
        e = await error(c, "capture_boot", {"connection_id": cid, "reset": reset, "timeout_ms": 0})
        assert e["code"] == "invalid_argument", (reset, e)
    assert opener.devices["/dev/ttyACM0"].opens == 1 and not opener.devices["/dev/ttyACM0"].line_events


async def test_read_only_refuses_the_touch(tmp_path: Path) -> None:
    opener = FakeOpener()
    board = opener.add("/dev/ttyACM0")
    async with Client(
        build_server(ConnectionManager(opener), port_lister=Bus([LEONARDO]), read_only=True)
    ) as c:
        cid = (await call(c, "open", {"port": "/dev/ttyACM0"}))["connection_id"]
        e = await error(c, "capture_boot", {"connection_id": cid, "reset": {"kind": "1200bps_touch"}})
        assert e["code"] == "read_only_mode"
    assert board.opens == 1 and board.line_events == [] and len(board.settings_history) == 1
