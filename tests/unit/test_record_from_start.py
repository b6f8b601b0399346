"""Issue 37.3: a recording holds the connection's bytes from its first one — ``open(record=…)``, the
CLI's ``record`` and ``record(from="buffer_start")`` — or from a given offset; the header states where
it starts, and bytes the ring already dropped are a ``lost`` line."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from serial_mcp.core.capture import CaptureEvent, CaptureHeader, capture_text
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeDevice, FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.openers import default_opener
from serial_mcp.store.capture_files import read_capture
from serial_mcp.store.captures import CaptureStore
from tests.tool_calls import call, error

pytestmark = pytest.mark.anyio

BANNER = b"".join(b"boot line %04d: ROM banner the device prints at open\r\n" % i for i in range(40))


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[tuple[Client, FakeDevice, Path]]:
    opener = FakeOpener()
    dev = opener.add("dev")
    async with Client(build_server(ConnectionManager(opener), captures=CaptureStore(tmp_path))) as c:
        yield c, dev, tmp_path


async def test_record_from_buffer_start_holds_what_came_before(env: tuple[Client, FakeDevice, Path]) -> None:
    c, dev, tmp = env
    cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
    dev.feed(BANNER)
    await call(c, "read", {"connection_id": cid, "match": "0039: ROM banner the device prints at open\r\n"})
    st = await call(
        c, "record", {"connection_id": cid, "action": "start", "path": "b.jsonl", "from": "buffer_start"}
    )
    assert st["start_offset"] == 0 and st["bytes_lost"] == 0
    dev.feed(b"after\r\n")
    await call(c, "read", {"connection_id": cid, "match": "after\r\n", "timeout_ms": 5000})
    await call(c, "record", {"connection_id": cid, "action": "stop"})
    cap = read_capture(tmp / "b.jsonl")
    assert cap.header.start_offset == 0
    assert cap.payload("rx") == BANNER + b"after\r\n"
    assert cap.events[0].type == "open"
    rx = [e for e in cap.events if e.type == "rx"]
    assert rx[0].offset == 0 and rx[-1].offset == len(BANNER)
    ts = [e.t for e in cap.events]
    assert ts == sorted(ts)


async def test_record_start_defaults_to_now_and_takes_an_offset(env: tuple[Client, FakeDevice, Path]) -> None:
    c, dev, tmp = env
    cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
    dev.feed(b"old\r\n")
    await call(c, "read", {"connection_id": cid, "match": "old\r\n", "timeout_ms": 5000})
    raw = await c.call_tool("record", {"connection_id": cid, "action": "start", "path": "now.jsonl"})
    assert raw.structured_content is not None and raw.structured_content["start_offset"] == 5
    assert any("from RX offset 5" in getattr(part, "text", "") for part in raw.content)
    dev.feed(b"new\r\n")
    await call(c, "read", {"connection_id": cid, "match": "new\r\n", "timeout_ms": 5000})
    await call(c, "record", {"connection_id": cid, "action": "stop"})
    at = await call(c, "record", {"connection_id": cid, "action": "start", "path": "at.jsonl", "from": 2})
    assert at["start_offset"] == 2
    await call(c, "record", {"connection_id": cid, "action": "stop"})
    assert read_capture(tmp / "now.jsonl").payload("rx") == b"new\r\n"
    cap = read_capture(tmp / "at.jsonl")
    assert cap.header.start_offset == 2 and cap.payload("rx") == b"d\r\nnew\r\n"
    assert next(e.offset for e in cap.events if e.type == "rx") == 2
    for bad in (11, -1, "cursor", True):
        e = await error(
            c, "record", {"connection_id": cid, "action": "start", "path": "x.jsonl", "from": bad}
        )
        assert e["code"] == "invalid_argument" and "from" in e["message"], bad
    assert not (tmp / "x.jsonl").exists()
    e = await error(c, "record", {"connection_id": cid, "action": "stop", "from": 0})
    assert e["code"] == "invalid_argument"


async def test_record_from_buffer_start_states_what_the_ring_dropped(
    env: tuple[Client, FakeDevice, Path],
) -> None:
    c, dev, tmp = env
    cid = (await call(c, "open", {"port": "dev", "rx_buffer_size": 1024}))["connection_id"]
    dev.feed(BANNER)  # 2 KB into a 1 KiB ring
    await call(c, "read", {"connection_id": cid, "match": "0039: ROM banner", "timeout_ms": 5000})
    st = await call(
        c, "record", {"connection_id": cid, "action": "start", "path": "l.jsonl", "from": "buffer_start"}
    )
    lost = len(BANNER) - 1024
    assert st["start_offset"] == 0 and st["bytes_lost"] == lost
    await call(c, "record", {"connection_id": cid, "action": "stop"})
    cap = read_capture(tmp / "l.jsonl")
    assert cap.header.start_offset == 0
    assert [(e.type, e.fields) for e in cap.events if e.type == "lost"] == [("lost", {"bytes": lost})]
    assert cap.payload("rx") == BANNER[lost:]
    assert next(e.offset for e in cap.events if e.type == "rx") == lost


@pytest.mark.slow
async def test_open_with_record_holds_a_replayed_instant_capture_whole(tmp_path: Path) -> None:
    """The issue's figure: an instant replay recorded at open saved 0 of its bytes."""
    source = tmp_path / "src"
    source.mkdir()
    events = [CaptureEvent(0.0, "rx", BANNER[i : i + 100], i) for i in range(0, len(BANNER), 100)]
    (source / "boot.jsonl").write_text(
        capture_text(CaptureHeader(created="2026-12-01T00:00:00.000000Z"), events)
    )
    out = tmp_path / "out"
    out.mkdir()
    server = build_server(ConnectionManager(default_opener(source)), captures=CaptureStore(out))
    async with Client(server) as c:
        url = f"replay://{source / 'boot.jsonl'}?mode=instant"
        cid = (await call(c, "open", {"port": url, "record": "r.jsonl"}))["connection_id"]
        await call(c, "read", {"connection_id": cid, "match": "0039: ROM banner", "timeout_ms": 5000})
        await call(c, "close", {"connection_id": cid})
    cap = read_capture(out / "r.jsonl")
    assert cap.payload("rx") == BANNER and cap.header.start_offset == 0


@pytest.mark.slow
async def test_open_reboot_board_with_record_holds_offset_zero(tmp_path: Path) -> None:
    """Issue 37's done-when: ``open(sim://reboot-board, record=…)`` holds the boot from offset 0."""
    server = build_server(ConnectionManager(default_opener(tmp_path)), captures=CaptureStore(tmp_path))
    async with Client(server) as c:
        opened = await call(c, "open", {"port": "sim://reboot-board?bootdelay=1", "record": "boot.jsonl"})
        cid = opened["connection_id"]
        await call(c, "read", {"connection_id": cid, "match": "stop autoboot", "timeout_ms": 5000})
        await call(c, "close", {"connection_id": cid})
    cap = read_capture(tmp_path / "boot.jsonl")
    rx = [e for e in cap.events if e.type == "rx"]
    assert rx[0].offset == 0 and cap.payload("rx").startswith(b"\r\nU-Boot SPL 2024.01")
    assert cap.header.start_offset == 0
