"""Issue 37.9: where the server's ``replay://`` looks for a relative name, said exactly: the capture
directory and the working directory's ``captures/``, never the working directory itself (it is where
the server was launched: README's security model); the error names where it looked and what it did
not read, whatever exists there."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from serial_mcp.core.capture import CaptureEvent, CaptureHeader, capture_text
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.openers import default_opener
from tests.tool_calls import call, error

pytestmark = pytest.mark.anyio

CAPTURE = capture_text(
    CaptureHeader(created="2026-12-01T00:00:00.000000Z"), [CaptureEvent(0.0, "rx", b"hi\r\n", 0)]
)


async def test_a_capture_in_the_working_directory_is_not_read_and_the_error_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "here.jsonl").write_text(CAPTURE)
    (tmp_path / "captures").mkdir()
    (tmp_path / "captures" / "kept.jsonl").write_text(CAPTURE)
    async with Client(build_server(ConnectionManager(default_opener()))) as c:
        for name in ("./here.jsonl", "here.jsonl", "absent.jsonl"):
            e = await error(c, "open", {"port": f"replay://{name}"})
            base = name.removeprefix("./")
            assert e["code"] == "port_not_found", e
            assert f"looked at {tmp_path / 'captures' / base}" in e["message"]
            assert f"Not read: {tmp_path / base} " in e["message"] and "--capture-dir" in e["message"]
        assert (await call(c, "open", {"port": "replay://kept.jsonl"}))["connection_id"]


async def test_capture_dir_dot_admits_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "here.jsonl").write_text(CAPTURE)
    async with Client(build_server(ConnectionManager(default_opener(Path("."))))) as c:
        assert (await call(c, "open", {"port": "replay://./here.jsonl"}))["connection_id"]
