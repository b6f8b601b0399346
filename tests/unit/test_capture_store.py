"""CaptureStore rules and the capture tools: names, no-clobber, symlinks, quotas, export → parse round trip,
continuous recording, and two processes sharing one capture directory."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from serial_mcp.errors import InvalidArgument, SerialMcpError
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeDevice, FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.store.capture_files import read_capture
from serial_mcp.store.captures import CaptureStore, Quotas, read_capture_file, validate_name
from tests.tool_calls import call


@pytest.mark.parametrize(
    "name",
    [
        "",
        "../x.jsonl",
        "/etc/passwd.jsonl",
        "a/b.jsonl",
        "a\\b.jsonl",
        "x..jsonl",
        ".hidden.jsonl",
        "x.txt",
        "CON.jsonl",
        "nul.log.jsonl",
        "com1.jsonl",
        "x" * 120 + ".jsonl",
        "a b.jsonl",
        "é.jsonl",
    ],
)
def test_bad_names_are_refused(name: str) -> None:
    with pytest.raises(InvalidArgument):
        validate_name(name)


@pytest.mark.parametrize("name", ["a.jsonl", "boot-1.jsonl", "ESP32_boot.2026-11-30.jsonl", "9.jsonl"])
def test_good_names(name: str) -> None:
    assert validate_name(name) == name


def test_export_never_overwrites_and_never_follows_symlinks(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    path, n = store.export(
        "a.jsonl", ['{"format": "serial-mcp-capture", "version": 1, "created": "2026-01-01T00:00:00Z"}']
    )
    assert path.read_bytes().endswith(b"\n") and n == path.stat().st_size
    with pytest.raises(SerialMcpError) as exc:
        store.export("a.jsonl", ["{}"])
    assert exc.value.code == "capture_exists"
    target = tmp_path / "outside.txt"
    target.write_text("keep me")
    os.symlink(target, tmp_path / "link.jsonl")
    with pytest.raises(SerialMcpError):
        store.export("link.jsonl", ["{}"])
    with pytest.raises(SerialMcpError):
        store.create_recording("link.jsonl")
    assert target.read_text() == "keep me"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")], "no temp files left"


HEADER = '{"format": "serial-mcp-capture", "version": 1, "created": "2026-01-01T00:00:00Z"}'


def test_an_export_that_loses_the_race_for_its_name_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CaptureStore(tmp_path)

    def name_appeared(src: object, dst: object) -> None:
        raise FileExistsError(17, "File exists")

    monkeypatch.setattr(os, "link", name_appeared)
    with pytest.raises(SerialMcpError) as exc:
        store.export("a.jsonl", [HEADER])
    assert exc.value.code == "capture_exists"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_list_reads_a_recording_cut_short(tmp_path: Path) -> None:
    (tmp_path / "cut.jsonl").write_text(HEADER + '\n{"t": 0.5, "type": "rx", "data": "6869"}\n{"t": 0.')
    [info] = CaptureStore(tmp_path).list()
    assert info.error is None and info.events == 1 and info.created == "2026-01-01T00:00:00Z"
    assert read_capture_file(tmp_path / "cut.jsonl") == read_capture(tmp_path / "cut.jsonl")


def test_quotas(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path, Quotas(max_file_bytes=100, max_total_bytes=150, max_files=2))
    store.export("a.jsonl", ["x" * 80])
    with pytest.raises(SerialMcpError) as exc:
        store.export("b.jsonl", ["x" * 120])  # over the per-file quota
    assert exc.value.code == "quota_exceeded"
    with pytest.raises(SerialMcpError):
        store.export("b.jsonl", ["x" * 90])  # 81 + 91 > total
    store.export("b.jsonl", ["x" * 40])
    with pytest.raises(SerialMcpError) as exc:
        store.export("c.jsonl", ["x"])  # file count
    assert exc.value.code == "quota_exceeded"


def test_disabled_store(tmp_path: Path) -> None:
    with pytest.raises(SerialMcpError) as exc:
        CaptureStore(None).export("a.jsonl", [])
    assert exc.value.code == "capture_disabled" and "--capture-dir" in exc.value.message


def _export_many(directory: str, prefix: str, count: int) -> int:
    store = CaptureStore(Path(directory), Quotas(max_files=30))
    made = 0
    for i in range(count):
        try:
            store.export(f"{prefix}-{i}.jsonl", ["x" * 100])
            made += 1
        except SerialMcpError as exc:
            assert exc.code == "quota_exceeded"
    return made


@pytest.mark.slow
def test_two_processes_share_the_quota(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        made = pool.starmap(_export_many, [(str(tmp_path), "p1", 25), (str(tmp_path), "p2", 25)])
    assert sum(made) == 30, made
    assert len(list(tmp_path.glob("*.jsonl"))) == 30


# --- through the tools ------------------------------------------------------------------------------


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[tuple[Client, FakeDevice, Path]]:
    opener = FakeOpener()
    dev = opener.add("dev", lambda data: b"\r\nOK\r\n" if data.endswith(b"\r") else None)
    server = build_server(ConnectionManager(opener), captures=CaptureStore(tmp_path))
    async with Client(server) as c:
        yield c, dev, tmp_path


@pytest.mark.anyio
async def test_export_round_trip(env: tuple[Client, FakeDevice, Path]) -> None:
    c, dev, tmp = env
    cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
    dev.feed(b"BOOT\xff\x00\r\n")
    await call(c, "read", {"connection_id": cid, "match": "\r\n", "timeout_ms": 5000})
    await call(c, "transact", {"connection_id": cid, "data": "AT\r", "match": "OK\r\n"})
    await call(c, "set_dtr_rts", {"connection_id": cid, "rts": False})
    r = await call(c, "export_log", {"connection_id": cid, "path": "s1.jsonl", "note": "bench 3"})
    assert r["path"] == "s1.jsonl" and r["bytes_written"] == (tmp / "s1.jsonl").stat().st_size
    cap = read_capture(tmp / "s1.jsonl")
    assert cap.header.port == "dev" and cap.header.note == "bench 3"
    assert [e.type for e in cap.events] == ["open", "rx", "tx", "rx", "control"]
    assert cap.payload("rx") == b"BOOT\xff\x00\r\n\r\nOK\r\n" and cap.payload("tx") == b"AT\r"
    assert [e.offset for e in cap.events if e.type == "rx"] == [0, 8]
    ts = [e.t for e in cap.events]
    assert ts == sorted(ts)
    again = await c.call_tool("export_log", {"connection_id": cid, "path": "s1.jsonl"})
    assert again.is_error and again.structured_content["error"]["code"] == "capture_exists"
    bad = await c.call_tool("export_log", {"connection_id": cid, "path": "../escape.jsonl"})
    assert bad.is_error and bad.structured_content["error"]["code"] == "invalid_argument"
    listed = await call(c, "list_captures", {})
    assert [x["name"] for x in listed["captures"]] == ["s1.jsonl"] and listed["captures"][0]["port"] == "dev"


@pytest.mark.anyio
async def test_continuous_recording(env: tuple[Client, FakeDevice, Path]) -> None:
    c, dev, tmp = env
    cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
    st = await call(c, "record", {"connection_id": cid, "action": "start", "path": "rec.jsonl"})
    assert st["recording"] is True
    dev.feed(b"hello\r\n")
    await call(c, "read", {"connection_id": cid, "match": "\r\n", "timeout_ms": 5000})
    await call(c, "transact", {"connection_id": cid, "data": "AT\r", "match": "OK\r\n"})
    dup = await c.call_tool("record", {"connection_id": cid, "action": "start", "path": "rec2.jsonl"})
    assert dup.is_error and dup.structured_content["error"]["code"] == "already_recording"
    stopped = await call(c, "record", {"connection_id": cid, "action": "stop"})
    assert stopped["recording"] is False and stopped["events_written"] == 3
    cap = read_capture(tmp / "rec.jsonl")
    assert cap.payload("rx") == b"hello\r\n\r\nOK\r\n" and cap.payload("tx") == b"AT\r"
    assert [e.type for e in cap.events] == ["rx", "tx", "rx"]


@pytest.mark.anyio
async def test_capture_tools_say_how_to_enable() -> None:
    opener = FakeOpener()
    opener.add("dev")
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
        r = await c.call_tool("export_log", {"connection_id": cid, "path": "x.jsonl"})
        assert r.is_error and r.structured_content["error"]["code"] == "capture_disabled"


@pytest.mark.anyio
@pytest.mark.slow
async def test_export_then_replay_gives_the_same_bytes_in_order(tmp_path: Path) -> None:
    """What an agent exported opens as a device again: rx bytes identical, and in respond mode the
    recorded replies answer the recorded commands in order."""
    from serial_mcp.serial.openers import default_opener

    opener = FakeOpener()
    replies = {b"AT\r": b"\r\nOK\r\n", b"ATI\r": b"\r\nSIM 1.0\r\n\r\nOK\r\n"}
    dev = opener.add("modem", lambda data: replies.get(data))
    async with Client(build_server(ConnectionManager(opener), captures=CaptureStore(tmp_path))) as c:
        cid = (await call(c, "open", {"port": "modem"}))["connection_id"]
        dev.feed(b"READY\r\n")
        await call(c, "read", {"connection_id": cid, "match": "READY\r\n", "timeout_ms": 5000})
        for cmd in ("AT\r", "ATI\r"):
            await call(c, "transact", {"connection_id": cid, "data": cmd, "match": "OK\r\n"})
        await call(c, "export_log", {"connection_id": cid, "path": "session.jsonl"})
    recorded = read_capture(tmp_path / "session.jsonl")
    async with Client(build_server(ConnectionManager(default_opener(tmp_path)))) as c:
        url = f"replay://{tmp_path / 'session.jsonl'}?mode=instant"
        cid = (await call(c, "open", {"port": url}))["connection_id"]
        r = await call(
            c, "read", {"connection_id": cid, "max_bytes": 1000, "idle_ms": 200, "timeout_ms": 5000}
        )
        assert r["data"].encode() == recorded.payload("rx") == b"READY\r\n\r\nOK\r\n\r\nSIM 1.0\r\n\r\nOK\r\n"
        await call(c, "close", {"connection_id": cid})
        cid = (await call(c, "open", {"port": f"replay://{tmp_path / 'session.jsonl'}?mode=respond"}))[
            "connection_id"
        ]
        await call(c, "read", {"connection_id": cid, "match": "READY\r\n", "timeout_ms": 5000})
        first = await call(c, "transact", {"connection_id": cid, "data": "AT\r", "match": "OK\r\n"})
        second = await call(c, "transact", {"connection_id": cid, "data": "ATI\r", "match": "OK\r\n"})
        assert first["read"]["data"] == "\r\nOK\r\n" and second["read"]["data"] == "\r\nSIM 1.0\r\n\r\nOK\r\n"
