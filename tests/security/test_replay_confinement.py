"""``replay://`` on the server reads capture files only from the capture directory, the working
directory's ``captures/`` and paths the operator allowlists. A path outside gets one error
(``not_allowed``, one message) whatever is there, and errors about a capture's content never quote
its values, so neither can be used to read or probe the host's files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client

import serial_mcp.serial.replay as replay
from serial_mcp.core.capture import CaptureEvent, CaptureHeader, capture_text
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import SerialMcpError
from serial_mcp.serial.replay import ReplayOpener
from serial_mcp.serial.replay_files import ReplayScope
from tests.security.openers import production_server
from tests.tool_calls import call, error

CREATED = "2026-11-30T10:00:00.000000Z"
SECRET = "hunter2"


def write_capture(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(capture_text(CaptureHeader(created=CREATED), [CaptureEvent(0.0, "rx", data)]))
    return path


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """work/ (the cwd) with captures/sample.jsonl; caps/ (the capture dir); outside/ with a capture,
    a directory and a JSON config holding a password; a link from caps/ to outside."""
    work, caps, outside = tmp_path / "work", tmp_path / "caps", tmp_path / "outside"
    write_capture(work / "captures" / "sample.jsonl", b"sample")
    write_capture(caps / "mine.jsonl", b"mine")
    write_capture(outside / "secret.jsonl", b"top secret")
    (outside / "dir.jsonl").mkdir()
    (outside / "config.json").write_text(json.dumps({"format": f"db_password={SECRET}", "version": 1}) + "\n")
    (caps / "escape.jsonl").symlink_to(outside / "secret.jsonl")
    (caps / "out").symlink_to(outside)
    monkeypatch.chdir(work)
    return tmp_path


OUTSIDE = [
    "{tmp}/outside/secret.jsonl",  # an existing capture
    "{tmp}/outside/missing.jsonl",  # nothing there
    "{tmp}/outside/dir.jsonl",  # a directory
    "{tmp}/outside/config.json",  # a JSON file that is no capture (its error would quote it)
    "{tmp}/outside",
    "/etc/passwd",
    "../outside/secret.jsonl",
    "captures/../../outside/secret.jsonl",
    "escape.jsonl",  # a link in the capture dir pointing out of it
    "out/secret.jsonl",  # through a linked directory
]


@pytest.mark.anyio
@pytest.mark.slow
async def test_paths_outside_the_capture_dirs_get_one_error_whatever_is_there(host: Path) -> None:
    seen: set[tuple[str, str]] = set()
    async with Client(production_server(host / "caps")) as c:
        for template in OUTSIDE:
            path = template.format(tmp=host)
            e = await error(c, "open", {"port": f"replay://{path}?mode=instant"})
            seen.add((e["code"], e["message"].replace(repr(path), "PATH")))
            assert SECRET not in e["message"] and "top secret" not in e["message"]
    assert len(seen) == 1, seen
    assert next(iter(seen))[0] == "not_allowed"


@pytest.mark.anyio
@pytest.mark.slow
async def test_the_capture_dir_and_the_project_samples_still_replay(host: Path) -> None:
    async with Client(production_server(host / "caps")) as c:
        for port, data in [
            ("replay://mine.jsonl?mode=instant", "mine"),
            (f"replay://{host}/caps/mine.jsonl?mode=instant", "mine"),
            ("replay://sample.jsonl?mode=instant", "sample"),
            ("replay://captures/sample.jsonl?mode=instant", "sample"),
        ]:
            cid = (await call(c, "open", {"port": port}))["connection_id"]
            r = await call(c, "read", {"connection_id": cid, "match": data, "timeout_ms": 5000})
            assert r["data"] == data, port
            await call(c, "close", {"connection_id": cid})
        e = await error(c, "open", {"port": "replay://nope.jsonl"})  # inside, missing: says where it looked
        assert e["code"] == "port_not_found" and "mine.jsonl" in e["message"]
        assert "escape.jsonl" not in e["message"]  # a link out of the directory is not offered


@pytest.mark.anyio
@pytest.mark.slow
async def test_without_a_capture_dir_only_the_project_samples(host: Path) -> None:
    async with Client(production_server()) as c:
        assert (await call(c, "open", {"port": "replay://sample.jsonl?mode=instant"}))["connection_id"]
        e = await error(c, "open", {"port": f"replay://{host}/caps/mine.jsonl?mode=instant"})
        assert e["code"] == "not_allowed"


@pytest.mark.parametrize(
    "line",
    [
        {"format": f"db_password={SECRET}", "version": 1, "created": CREATED},
        {"format": "serial-mcp-capture", "version": SECRET, "created": CREATED},
        {"format": "serial-mcp-capture", "version": 1, "created": SECRET},
        {"format": "serial-mcp-capture", "version": 1, "created": CREATED, "port": {SECRET: 1}},
        {"format": "serial-mcp-capture", "version": 1, "created": CREATED, "note": [SECRET]},
    ],
)
def test_header_errors_never_quote_the_file(host: Path, line: dict[str, object]) -> None:
    path = host / "caps" / "bad.jsonl"
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(SerialMcpError) as info:
        ReplayOpener(host / "caps", scope=ReplayScope(host / "caps")).open(
            "replay://bad.jsonl", SerialSettings()
        )
    assert info.value.code == "capture_invalid" and info.value.details["line"] == 1
    assert SECRET not in info.value.message


@pytest.mark.parametrize(
    "event",
    [
        {"t": SECRET, "type": "rx", "data": "00"},
        {"t": -1.5, "type": "rx", "data": "00"},
        {"t": 0, "type": {SECRET: 1}, "data": "00"},
        {"t": 0, "type": "rx", "data": f"00{SECRET}"},
        {"t": 0, "type": "rx", "data": [SECRET]},
        {"t": 0, "type": "lost", "bytes": SECRET},
        {"t": 0, "type": "control", "dtr": SECRET},
        {"t": 0, "type": "marker", "label": {SECRET: 1}},
        {"t": 0, "type": "rx", "data": "00", "offset": SECRET},
    ],
)
def test_event_errors_name_the_line_and_field_not_the_value(host: Path, event: dict[str, object]) -> None:
    path = host / "caps" / "bad.jsonl"
    header = {"format": "serial-mcp-capture", "version": 1, "created": CREATED}
    path.write_text(
        json.dumps(header) + "\n" + json.dumps({"t": 9, "type": "marker"}) + "\n" + json.dumps(event) + "\n"
    )
    with pytest.raises(SerialMcpError) as info:
        ReplayOpener(host / "caps").open("replay://bad.jsonl", SerialSettings())
    assert info.value.code == "capture_invalid" and info.value.details["line"] == 3
    assert (
        SECRET not in info.value.message
        and "-1.5" not in info.value.message
        and "9" not in info.value.message[40:]
    )


def test_a_file_swapped_for_a_link_after_the_check_is_not_read(
    host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The judged real path is opened without following links: a link put there between the check
    and the open (pointing out of scope) is refused, and nothing is read."""
    opener = ReplayOpener(host / "caps", scope=ReplayScope(host / "caps"))
    judge = ReplayOpener.resolve
    target = host / "caps" / "mine.jsonl"

    def resolve_then_swap(self: ReplayOpener, path: str) -> Path:
        found = judge(self, path)
        target.unlink()
        target.symlink_to(host / "outside" / "secret.jsonl")
        return found

    monkeypatch.setattr(replay.ReplayOpener, "resolve", resolve_then_swap)
    with pytest.raises(SerialMcpError) as info:
        opener.open("replay://mine.jsonl?mode=instant", SerialSettings())
    assert info.value.code == "not_allowed"


def test_the_pyserial_library_handler_stays_unconfined(host: Path) -> None:
    """``serial_mcp.pyserial_replay`` serves the operator's own programs: any path they give."""
    handle = ReplayOpener().open(f"replay://{host}/outside/secret.jsonl?mode=instant", SerialSettings())
    assert handle.read_chunk() == b"top secret"
