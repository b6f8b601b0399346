"""Faults that used to leak or hang: closed connections kept alive by cycles, a dead recorder that
kept queueing, ``record stop`` after a disk-full death, memory beyond a server-wide bound."""

from __future__ import annotations

import errno
import gc
import io
import logging
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from serial_mcp.core.ring import MAX_CAPACITY
from serial_mcp.errors import SerialMcpError
from serial_mcp.serial import recorder as recorder_module
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.recorder import Recorder

pytestmark = pytest.mark.anyio


@pytest.fixture
def no_gc() -> Iterator[None]:
    """Only reference counting frees things: a cycle would keep them."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.slow
async def test_a_closed_connection_and_its_ring_are_freed_at_once(no_gc: None) -> None:
    opener = FakeOpener()
    dev = opener.add("board", lambda data: b"ok\r\n")
    manager = ConnectionManager(opener)
    conn = await manager.open("board", rx_buffer_size=1 << 20)
    dev.feed(b"hello")
    conn.record("marker", label="x")
    refs = (weakref.ref(conn), weakref.ref(conn.ring))
    await manager.close(conn.id)
    del conn
    assert [r() for r in refs] == [None, None]


class DiskFull(io.RawIOBase):
    """A capture file on a full disk: the header fits, then every write fails with ENOSPC."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.closed_cleanly = False

    def writable(self) -> bool:
        return True

    def write(self, b: bytes) -> int:  # type: ignore[override]
        if len(b) > self.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.room -= len(b)
        return len(b)

    def fileno(self) -> int:
        raise OSError(errno.EBADF, "no descriptor")

    def close(self) -> None:
        self.closed_cleanly = True
        super().close()


async def recording_on_a_full_disk(
    tmp_path: Path,
) -> tuple[ConnectionManager, Connection, Recorder, DiskFull]:
    opener = FakeOpener()
    dev = opener.add("board")
    manager = ConnectionManager(opener)
    conn = await manager.open("board")
    raw = DiskFull(room=4096)
    rec = Recorder(conn, io.BufferedWriter(raw, buffer_size=8192), tmp_path / "r.jsonl", 1 << 30)  # type: ignore[type-var]
    conn.start_recording(rec)
    for _ in range(40):  # buffered fine, then the flush finds the disk full: the writer dies on ENOSPC
        dev.feed(b"x" * 200)
        await anyio.sleep(0.001)
    with anyio.fail_after(10):
        while rec.active:
            await anyio.sleep(0.01)
    return manager, conn, rec, raw


async def test_a_recorder_dead_on_enospc_is_detached_and_queues_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        manager, conn, rec, raw = await recording_on_a_full_disk(tmp_path)
    dev = manager.opener.devices["board"]  # type: ignore[attr-defined]
    for _ in range(50):
        dev.feed(b"y" * 4096)
    for _ in range(20):
        conn.record("marker", label="after")
    assert rec.on_event not in conn.listeners
    assert rec.queued == 0
    assert rec.stopped_reason is not None and "No space left" in rec.stopped_reason
    assert raw.closed_cleanly
    failures = [r for r in caplog.records if r.name == "serial_mcp.serial.recorder"]
    assert len(failures) == 1 and failures[0].exc_info is None  # one line, no traceback
    await manager.close_all()


async def test_record_stop_after_a_disk_full_death_answers_at_once(tmp_path: Path) -> None:
    manager, conn, rec, _ = await recording_on_a_full_disk(tmp_path)
    with anyio.fail_after(2):  # was 30 s: the writer thread never said it was done
        stopped = await conn.stop_recording("stopped")
    assert stopped is rec and "No space left" in (rec.stopped_reason or "")
    assert not rec.thread_alive
    await manager.close_all()


async def test_rings_beyond_the_server_memory_bound_are_refused() -> None:
    opener = FakeOpener()
    for name in ("a", "b", "c"):
        opener.add(name)
    manager = ConnectionManager(opener, max_ring_memory=3 << 20)
    await manager.open("a", rx_buffer_size=1 << 20)
    await manager.open("b", rx_buffer_size=1 << 20)
    with pytest.raises(SerialMcpError) as exc:
        await manager.open("c", rx_buffer_size=2 << 20)
    assert exc.value.code == "resource_limit" and "max-ring-memory" in exc.value.message
    await manager.close("a")
    await manager.open("c", rx_buffer_size=2 << 20)  # closing gave its share back
    await manager.close_all()


async def test_a_ring_that_cannot_be_allocated_is_resource_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import serial_mcp.serial.rx_view as rx_view

    class NoMemory:
        def __init__(self, capacity: int) -> None:
            raise MemoryError

    opener = FakeOpener()
    dev = opener.add("a")
    manager = ConnectionManager(opener, max_ring_memory=MAX_CAPACITY)
    monkeypatch.setattr(rx_view, "RxRing", NoMemory)
    with pytest.raises(SerialMcpError) as exc:
        await manager.open("a", rx_buffer_size=MAX_CAPACITY)
    assert exc.value.code == "resource_limit"
    assert dev.closed
    assert manager.list() == []


@pytest.mark.slow
async def test_closing_through_the_tools_frees_the_connection(no_gc: None, tmp_path: Path) -> None:
    from mcp import Client

    from serial_mcp.mcp.server import build_server
    from tests.tool_calls import call

    opener = FakeOpener()
    dev = opener.add("board", lambda data: b"ok\r\n")
    manager = ConnectionManager(opener)
    async with Client(build_server(manager)) as c:
        cid = (await call(c, "open", {"port": "board", "rx_buffer_size": 1 << 20}))["connection_id"]
        dev.feed(b"boot\r\n")
        await call(c, "transact", {"connection_id": cid, "data": "x", "match": "ok"})
        await call(c, "read", {"connection_id": cid, "timeout_ms": 0})
        await call(c, "get_status", {"connection_id": cid})
        conn = manager.get(cid)
        refs = (weakref.ref(conn), weakref.ref(conn.ring))
        del conn
        await call(c, "close", {"connection_id": cid})
        assert [r() for r in refs] == [None, None]


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS])
@pytest.mark.slow
async def test_a_failing_capture_disk_is_a_storage_error_not_the_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    import os

    from mcp import Client

    import serial_mcp.store.captures as captures  # its create_atomic: an export's write
    from serial_mcp.mcp.server import build_server
    from serial_mcp.store.captures import CaptureStore
    from tests.tool_calls import call, error

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(code, os.strerror(code))

    opener = FakeOpener()
    opener.add("board")
    async with Client(build_server(ConnectionManager(opener), captures=CaptureStore(tmp_path))) as c:
        cid = (await call(c, "open", {"port": "board"}))["connection_id"]
        monkeypatch.setattr(captures, "create_atomic", refuse)
        monkeypatch.setattr(os, "open", refuse)  # the capture store opens a recording with os.open
        for tool, args in (
            ("export_log", {"path": "a.jsonl"}),
            ("record", {"action": "start", "path": "b.jsonl"}),
        ):
            err = await error(c, tool, {"connection_id": cid, **args})
            assert err["code"] == "storage_error", err
            assert os.strerror(code) in err["message"] and "port is fine" in err["message"]
        monkeypatch.undo()
        assert (await call(c, "get_status", {"connection_id": cid}))["state"] == "open"


@pytest.mark.slow
async def test_get_log_answers_are_capped_and_page_with_since() -> None:
    from mcp import Client

    from serial_mcp.mcp.server import build_server
    from tests.tool_calls import call

    opener = FakeOpener()
    dev = opener.add("board")
    manager = ConnectionManager(opener)
    async with Client(build_server(manager)) as c:
        cid = (await call(c, "open", {"port": "board", "rx_buffer_size": 16 << 20}))["connection_id"]
        conn = manager.get(cid)
        for i in range(200):  # 10 MB of payloads, all still in the ring
            dev.feed(b"x" * 50_000)
            with anyio.fail_after(10):
                while conn.ring.end_offset < (i + 1) * 50_000:
                    await conn.wait_change(1.0, conn.ring.end_offset)
        r = await c.call_tool("get_log", {"connection_id": cid, "limit": 1000})
        assert len(r.model_dump_json()) < 5 << 20  # was 10 MB here (48.9 MB at limit 1000 in the issue)
        page = r.structured_content
        assert page is not None and page["truncated"] and page["next_since"] == page["last_seq"]
        assert "since=" in r.content[0].text  # type: ignore[union-attr]
        received = sum(e["length"] for e in page["events"] if e["type"] == "rx")
        pages = 1
        while page["truncated"]:
            page = await call(
                c, "get_log", {"connection_id": cid, "limit": 1000, "since": page["next_since"]}
            )
            received += sum(e["length"] for e in page["events"] if e["type"] == "rx")
            pages += 1
        assert received == 10_000_000 and pages >= 3
        assert page["next_since"] is None


async def test_a_new_recording_can_start_after_a_disk_full_death(tmp_path: Path) -> None:
    from serial_mcp.engine import log_ops
    from serial_mcp.engine.access import Caller
    from serial_mcp.engine.options import RecordOptions
    from serial_mcp.engine.services import Services
    from serial_mcp.store.captures import CaptureStore

    manager, conn, _rec, _ = await recording_on_a_full_disk(tmp_path)
    svc = Services(manager, CaptureStore(tmp_path / "captures"))
    (tmp_path / "captures").mkdir()
    started = await log_ops.record(svc, Caller.local(), conn.id, RecordOptions("start", path="again.jsonl"))
    assert started.recording and started.path == "again.jsonl"  # not already_recording
    await manager.close_all()


class StalledDisk(io.RawIOBase):
    """A capture file on a disk that stops answering (a hung network share) until released."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, b: bytes) -> int:  # type: ignore[override]
        self.go.wait(30)
        self.data += b
        return len(b)

    def fileno(self) -> int:
        raise OSError(errno.EBADF, "no descriptor")


async def test_a_disk_that_falls_behind_stops_the_recording_not_the_servers_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recorder_module, "MAX_BACKLOG", 64 << 10)
    opener = FakeOpener()
    dev = opener.add("board")
    manager = ConnectionManager(opener)
    conn = await manager.open("board", rx_buffer_size=1 << 20)
    raw = StalledDisk()
    raw.go.set()  # the header goes through; then the disk hangs
    rec = Recorder(conn, io.BufferedWriter(raw, buffer_size=1024), tmp_path / "r.jsonl", 1 << 30)  # type: ignore[type-var]
    raw.go.clear()
    conn.start_recording(rec)
    with anyio.fail_after(20):
        for i in range(1, 257):  # 1 MiB in 4 KiB chunks, each its own event: 16 × the backlog allowed
            dev.feed(b"z" * 4096)
            while conn.rx_end() < i * 4096:
                await conn.wait_change(2.0, conn.rx_end())
    assert rec.stopped_reason is not None and "fell more than" in rec.stopped_reason  # said at once
    assert rec.queued <= (64 << 10) // 4096 + 2  # what it holds stays bounded; before: every chunk
    assert not rec.active
    raw.go.set()  # the disk comes back: what was held is written, then the marker, and it lets go
    with anyio.fail_after(10):
        await conn.stop_recording("stopped")
    assert rec.on_event not in conn.listeners and not rec.thread_alive
    lines = bytes(raw.data).decode().splitlines()
    assert "fell more than" in lines[-1] and '"type":"marker"' in lines[-1].replace(" ", "")
    assert 0 < rec.events_written <= (64 << 10) // 4096 + 2
    await manager.close_all()
