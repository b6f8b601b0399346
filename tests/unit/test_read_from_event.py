"""Issue 38.3: ``read(from="last_boot" | {"event": SEQ})`` — "the boot after the flash" is one call.

The device output is real (tests/data/crashes: esp-idf-monitor's ESP32-C3 panic test inputs): a boot,
an ``abort()``, the boot that is its reset.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from serial_mcp import Engine
from serial_mcp.engine.option_types import MatchSpec
from serial_mcp.errors import InvalidArgument
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from tests.tool_calls import call

pytestmark = pytest.mark.anyio

C3 = (Path(__file__).parent.parent / "data" / "crashes" / "esp32c3-panics.txt").read_bytes()
ABORT_AT = C3.index(b"abort() was called")
SECOND_BOOT = C3.rindex(b"\n", 0, C3.index(b"ESP-ROM", 10)) + 1
FED = C3[: SECOND_BOOT + 200]
TAIL: MatchSpec = {"pattern": FED[-16:].hex(), "pattern_encoding": "hex"}  # every byte fed has arrived


async def test_from_last_boot_and_from_an_event_start_where_they_did() -> None:
    opener = FakeOpener()
    device = opener.add("dev")
    async with Engine(opener=opener) as engine:
        conn = await engine.open("dev")
        device.feed(FED)
        await conn.read(match=TAIL, timeout_ms=3000)
        seen = await conn.read(until=["boot"], from_=ABORT_AT, timeout_ms=3000)  # the reset's boot is in
        assert seen.stop_reason == "event", seen.summary()
        boot = await conn.read(from_="last_boot", timeout_ms=0)
        assert boot.from_offset == SECOND_BOOT, boot.summary()
        assert boot.next_offset == len(FED)
        crash = next(e for e in conn.events() if e["kind"] == "crash")
        at_crash = await conn.read(from_={"event": crash["seq"]}, max_bytes=18, timeout_ms=0)
        assert at_crash.from_offset == ABORT_AT and at_crash.data == "abort() was called"
        first = await conn.read(from_={"event": 1}, max_bytes=7, timeout_ms=0)
        assert first.from_offset == 0
        assert (await conn.read(from_=SECOND_BOOT, max_bytes=1, timeout_ms=0)).from_offset == SECOND_BOOT


async def test_no_boot_yet_or_no_such_event_is_a_clear_error() -> None:
    opener = FakeOpener()
    device = opener.add("dev")
    async with Engine(opener=opener) as engine:
        conn = await engine.open("dev")
        device.feed(b"hello\r\n")
        await conn.read(match="hello", timeout_ms=3000)
        with pytest.raises(InvalidArgument, match="no boot seen on this connection"):
            await conn.read(from_="last_boot", timeout_ms=0)
        with pytest.raises(InvalidArgument, match="keeps no event 7"):
            await conn.read(from_={"event": 7}, timeout_ms=0)
        for bad in ({"event": 0}, {"event": "1"}, {"evnt": 1}, "last-boot"):
            with pytest.raises(InvalidArgument, match="last_boot"):
                await conn.read(from_=bad, timeout_ms=0)  # type: ignore[arg-type]  # mypy refuses them too


async def test_the_read_tool_takes_an_event_as_from() -> None:
    opener = FakeOpener()
    device = opener.add("dev")
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
        device.feed(FED)
        await call(c, "read", {"connection_id": cid, "match": TAIL, "timeout_ms": 3000})
        await call(c, "read", {"connection_id": cid, "until": ["boot"], "from": ABORT_AT, "timeout_ms": 3000})
        r = await call(
            c, "read", {"connection_id": cid, "from": "last_boot", "max_bytes": 10, "timeout_ms": 0}
        )
        assert r["from_offset"] == SECOND_BOOT
        r = await call(
            c, "read", {"connection_id": cid, "from": {"event": 1}, "max_bytes": 10, "timeout_ms": 0}
        )
        assert r["from_offset"] == 0
