"""``read`` with the ``esp_log`` parser and a ``print_filter``, over the fake opener: the frames are the
lines esp-idf-monitor's own filter (``LineMatcher``) prints from a real ESP32 boot log."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from tests.tool_calls import call
from tests.tool_calls import error as err

pytestmark = pytest.mark.anyio
line_matcher = pytest.importorskip("esp_idf_monitor.base.line_matcher")
LineMatcher: Any = line_matcher.LineMatcher

BOOT = Path(__file__).resolve().parents[1] / "data" / "bootlogs" / "esp32" / "esp32-mdf-boot.txt"


@pytest.fixture
async def env() -> AsyncIterator[tuple[Client, FakeOpener]]:
    opener = FakeOpener()
    opener.add("dev")
    async with Client(build_server(ConnectionManager(opener))) as c:
        yield c, opener


def monitor_text(line: bytes) -> str:
    try:
        return line.decode()
    except UnicodeDecodeError:
        return line.strip().decode(errors="ignore")


@pytest.mark.parametrize("print_filter", ["*:W", "boot mdf_device_handle:I mesh:E vfs:I", "*:N wifi:I"])
async def test_a_filtered_read_returns_the_lines_esp_idf_monitor_prints(
    env: tuple[Client, FakeOpener], print_filter: str
) -> None:
    c, opener = env
    cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
    log = BOOT.read_bytes()
    opener.devices["dev"].feed(log)
    parser = {"type": "esp_log", "print_filter": print_filter}
    frames: list[dict[str, Any]] = []
    while True:  # the cursor's decoder keeps its place between reads
        r = await call(
            c,
            "read",
            {
                "connection_id": cid,
                "rx_parser": parser,
                "max_frames": 10_000,
                "timeout_ms": 300,
                "idle_ms": 100,
            },
        )
        frames += r["frames"]
        if r["next_offset"] >= len(log.rstrip(b"\r\n")) or not r["frames"]:
            break
    oracle = LineMatcher(print_filter)
    kept = [
        line for line in log.splitlines(keepends=True) if line.strip() and oracle.match(monitor_text(line))
    ]
    assert [f["data"] for f in frames if f["data"]] == [line.rstrip(b"\r\n").decode() for line in kept]
    assert any(f["parsed"]["kind"] == "log" for f in frames)


async def test_a_bad_print_filter_is_refused_and_changes_nothing(env: tuple[Client, FakeOpener]) -> None:
    c, opener = env
    cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
    opener.devices["dev"].feed(b"I (1) boot: hello\n")
    e = await err(
        c, "read", {"connection_id": cid, "rx_parser": {"type": "esp_log", "print_filter": "boot:X"}}
    )
    assert e["code"] == "invalid_argument" and "'X' is not one of" in e["message"]
    r = await call(c, "read", {"connection_id": cid, "rx_parser": {"type": "esp_log"}, "timeout_ms": 2000})
    assert [f["parsed"]["tag"] for f in r["frames"]] == ["boot"]  # the cursor did not move


async def _read_all(c: Client, tool_args: dict[str, Any], end: int) -> list[dict[str, Any]]:
    """Every read a cursor needs to get through the boot log (its decoder keeps its place)."""
    results: list[dict[str, Any]] = []
    while True:
        r = await c.call_tool("read", {**tool_args, "max_frames": 10_000, "timeout_ms": 300, "idle_ms": 100})
        assert not r.is_error, r.content
        assert isinstance(r.structured_content, dict)
        results.append({"lean": r.structured_content, "text": r.content[0].text})  # type: ignore[union-attr]
        if r.structured_content["next_offset"] >= end or not r.structured_content.get("frames"):
            return results


async def test_a_filtered_read_counts_the_frames_its_filter_hid(env: tuple[Client, FakeOpener]) -> None:
    """``frames_filtered``: what the print filter hid is said (README: "hidden lines are counted"), in
    the structured result and the text; a read that hid nothing carries no such field (lean)."""
    c, opener = env
    cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
    log = BOOT.read_bytes()
    opener.devices["dev"].feed(log)
    end = len(log.rstrip(b"\r\n"))
    every = await _read_all(c, {"connection_id": cid, "cursor": "all", "rx_parser": {"type": "esp_log"}}, end)
    parser = {"type": "esp_log", "print_filter": "*:E"}
    shown = await _read_all(c, {"connection_id": cid, "cursor": "errors", "rx_parser": parser}, end)
    total = sum(len(r["lean"].get("frames", [])) for r in every)
    kept = sum(len(r["lean"].get("frames", [])) for r in shown)
    hidden = sum(r["lean"].get("frames_filtered", 0) for r in shown)
    assert hidden > 0 and hidden == total - kept
    assert all("frames_filtered" not in r["lean"] for r in every)  # nothing hidden: not in a lean result
    first = shown[0]
    assert f" hid {first['lean']['frames_filtered']} frame(s) by the print filter" in first["text"]
    assert "hid" not in every[0]["text"]


async def test_a_transact_counts_the_frames_its_print_filter_hid(env: tuple[Client, FakeOpener]) -> None:
    c, opener = env
    reply = b"I (10) boot: fine\nE (11) wifi: lost\nW (12) mesh: slow\nI (13) app: done\n"
    opener.add("board", lambda data: reply if data == b"status\n" else None)
    cid = (await call(c, "open", {"port": "board"}))["connection_id"]
    r = await c.call_tool(
        "transact",
        {
            "connection_id": cid,
            "data": "status\n",
            "rx_parser": {"type": "esp_log", "print_filter": "*:E"},
            "timeout_ms": 2000,
            "idle_ms": 100,
        },
    )
    assert not r.is_error, r.content
    assert isinstance(r.structured_content, dict)
    read = r.structured_content["read"]
    assert [f["parsed"]["tag"] for f in read["frames"]] == ["wifi"]
    assert read["frames_filtered"] == 3
    assert " hid 3 frame(s) by the print filter" in r.content[0].text  # type: ignore[union-attr]


async def test_a_summary_read_counts_the_frames_its_print_filter_hid(env: tuple[Client, FakeOpener]) -> None:
    """``read(summary=true)`` with a print filter: the summary counts the lines shown, and the lines
    the filter hid are said (``frames_filtered``, and in the text), as a framed read says them."""
    c, opener = env
    cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
    log = b"I (10) boot: fine\nE (11) wifi: lost\nW (12) mesh: slow\nI (13) app: done\nE (14) wifi: again\n"
    opener.devices["dev"].feed(log)
    r = await c.call_tool(
        "read",
        {
            "connection_id": cid,
            "summary": True,
            "to": len(log),
            "rx_parser": {"type": "esp_log", "print_filter": "*:E"},
        },
    )
    assert not r.is_error, r.content
    assert isinstance(r.structured_content, dict)
    assert r.structured_content["counts"]["frames"] == 2
    assert r.structured_content["frames_filtered"] == 3
    assert " hid 3 frame(s) by the print filter" in r.content[0].text  # type: ignore[union-attr]
