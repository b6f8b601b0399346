"""Issue 37.1-2: a summary covers exactly its window: ``until`` ends it where a read would end, the
events it lists are those of its window, and a damaged frame still pending when it ends is counted
as bad and said so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from serial_mcp.core import checksums
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from tests.tool_calls import call

pytestmark = pytest.mark.anyio

C3 = (Path(__file__).parent.parent / "data" / "crashes" / "esp32c3-panics.txt").read_bytes()
SECOND_BOOT = C3.rindex(b"\n", 0, C3.index(b"ESP-ROM", 10)) + 1  # the reset after the first crash
_crc = checksums.function("crc16_modbus")


def rtu(adu: bytes, good: bool = True) -> bytes:
    return adu + (_crc(adu) ^ (0 if good else 0x0101)).to_bytes(2, "little")


async def _read(c: Client, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
    r = await c.call_tool("read", args)
    assert not r.is_error and isinstance(r.structured_content, dict), r.content
    return r.structured_content, "".join(getattr(p, "text", "") for p in r.content)


async def test_until_ends_a_summary_where_a_framed_read_ends() -> None:
    opener = FakeOpener()
    opener.add("dev").feed(C3)
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
        args = {"connection_id": cid, "from": 0, "until": ["crash"], "timeout_ms": 5000}
        got, _ = await _read(c, {**args, "summary": True})
        ref, _ = await _read(c, {**args, "rx_framing": {"type": "line"}, "max_frames": 10_000})
        assert got["stop_reason"] == "event" and got["next_offset"] == SECOND_BOOT, got
        assert got["counts"]["frames"] == len(ref["frames"])


async def test_a_summary_lists_only_the_events_of_its_window() -> None:
    opener = FakeOpener()
    opener.add("dev").feed(C3)
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
        await call(c, "read", {"connection_id": cid, "from": 0, "protocol": "raw", "max_bytes": len(C3),
                               "timeout_ms": 5000, "cursor": "settle"})  # fmt: skip
        got, _ = await _read(
            c, {"connection_id": cid, "summary": True, "from": SECOND_BOOT, "to": len(C3), "timeout_ms": 0}
        )
        # a boot loop is met at the boot that made it one (in the window); it names its first boot
        offsets = [e["offset"] for e in got.get("events") or [] if e["kind"] != "boot_loop"]
        assert offsets and all(SECOND_BOOT <= o < len(C3) for o in offsets), offsets
        whole, _ = await _read(
            c, {"connection_id": cid, "summary": True, "from": 0, "to": len(C3), "timeout_ms": 0}
        )
        assert [e["offset"] for e in whole.get("events") or []][:1] == [0]  # the earlier ones were kept


async def test_a_damaged_frame_pending_at_the_end_of_a_summary_is_counted_bad() -> None:
    good = rtu(bytes.fromhex("010300000001")) + rtu(bytes.fromhex("010302002a"))
    damaged = rtu(bytes.fromhex("010302002a"), good=False)
    opener = FakeOpener()
    opener.add("dev").feed(good + damaged)
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "dev", "protocol": "modbus_rtu"}))["connection_id"]
        got, text = await _read(
            c, {"connection_id": cid, "summary": True, "from": 0, "to": len(good + damaged), "timeout_ms": 0}
        )
        counts = got["counts"]
        assert (counts["frames"], counts["valid"], counts["bad"]) == (3, 2, 1), counts
        assert counts["bad_reasons"] == {"damaged_pending": 1}
        assert counts["pending"] == {"offset": len(good), "bytes": len(damaged), "damaged": True}
        assert counts["types"]["modbus fc03"] == {
            **counts["types"]["modbus fc03"],
            "n": 3,
            "valid": 2,
            "bad": 1,
        }
        assert f"1 damaged frame pending at offset {len(good)}" in text, text


async def test_a_frame_cut_at_the_length_limit_is_counted_and_named() -> None:
    lines = b"short\r\n" + b"x" * 40 + b"\r\nok\r\n"
    opener = FakeOpener()
    opener.add("dev").feed(lines)
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
        args = {"connection_id": cid, "summary": True, "from": 0, "to": len(lines), "timeout_ms": 0}
        got, text = await _read(c, {**args, "rx_framing": {"type": "line", "max_length": 16}})
        counts = got["counts"]
        assert (counts["frames"], counts["valid"], counts["bad"]) == (3, 2, 1), counts
        assert counts["bad_reasons"] == {"cut_at_max_length": 1} and "cut_at_max_length 1" in text
