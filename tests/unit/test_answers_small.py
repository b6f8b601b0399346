"""Issue 26, items 6-7: standing rules visible, and the small things the same agent run found."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.openers import default_opener
from serial_mcp.store.captures import CaptureStore
from tests.tool_calls import call
from tests.unit.test_sim_devices import SCRIPT

pytestmark = pytest.mark.anyio


async def _text(c: Client, name: str, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
    r = await c.call_tool(name, args)
    assert not r.is_error, r.content
    return r.structured_content or {}, r.content[0].text  # type: ignore[union-attr]


async def test_open_echoes_its_standing_rules_and_a_read_names_their_answers() -> None:
    opener = FakeOpener()
    dev = opener.add("dev")
    async with Client(build_server(ConnectionManager(opener))) as c:
        opened, text = await _text(
            c, "open", {"port": "dev", "respond": [{"on": "Hit any key", "send": " "}]}
        )
        assert "standing rules armed: 'Hit any key' x1" in text, text
        dev.feed(b"U-Boot 2021\r\nHit any key to stop autoboot: 3\r\n=> ")
        _, text = await _text(
            c, "read", {"connection_id": opened["connection_id"], "match": "=> ", "timeout_ms": 5000}
        )
        assert "responder 'Hit any key' answered at offset 13" in text, text


async def test_status_text_says_what_the_default_cursor_lost() -> None:
    opener = FakeOpener()
    dev = opener.add("dev")
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "dev", "rx_buffer_size": 4096}))["connection_id"]
        dev.feed(b"x" * 10_000 + b"END")
        for _ in range(20):  # another cursor reads to the end (the ring may overrun it on the way)
            r = await call(
                c, "read", {"connection_id": cid, "cursor": "probe", "match": "END", "timeout_ms": 5000}
            )
            if r["matched"]:
                break
        assert r["matched"] and r["next_offset"] == 10_003
        status, text = await _text(c, "get_status", {"connection_id": cid})
        lost = status["cursors"]["default"]["lost"]
        assert lost > 0 and f"default cursor lost {lost} byte(s)" in text, text


async def test_binary_frames_of_one_read_share_one_encoding() -> None:
    opener = FakeOpener()
    dev = opener.add("dev")
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "dev", "protocol": "cobs"}))["connection_id"]
        dev.feed(b"\x03ab\x00" + b"\x03\xff\xfe\x00")  # one frame is text, the next is not
        r = await call(c, "read", {"connection_id": cid, "max_frames": 2, "timeout_ms": 3000})
        assert [f["encoding"] for f in r["frames"]] == ["hex", "hex"], r["frames"]
        assert r["frames"][0]["data"] == "6162"


async def test_record_status_after_a_duration_stop_and_capture_sizes(tmp_path: Any) -> None:
    opener = FakeOpener()
    dev = opener.add("dev")
    server = build_server(ConnectionManager(opener), captures=CaptureStore(tmp_path))
    async with Client(server) as c:
        cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
        _, text = await _text(
            c, "record", {"connection_id": cid, "action": "start", "path": "run.jsonl", "duration_ms": 20}
        )
        assert "replay://run.jsonl" in text and "serial-mcp view" not in text and "bytes. " in text, text
        dev.feed(b"hello\r\n")
        with anyio.fail_after(10):  # the recording stops by itself (a timer); wait until it says so
            while True:
                status, text = await _text(c, "record", {"connection_id": cid, "action": "status"})
                if not status.get("recording"):
                    break
                await anyio.sleep(0.01)
        assert status["path"] == "run.jsonl" and status["stopped_reason"] == "duration", status
        assert "stopped (duration)" in text
        _, text = await _text(c, "list_captures", {})
        assert "run.jsonl (" in text and " B" in text, text


@pytest.mark.slow
async def test_a_micropython_step_that_raised_says_so_and_counts_its_bytes() -> None:
    async with Client(build_server(ConnectionManager(default_opener()), port_lister=list)) as c:
        cid = (await call(c, "open", {"port": "sim://micropython"}))["connection_id"]
        r, text = await _text(c, "transact", {"connection_id": cid, "steps": [{"micropython": SCRIPT}]})
        assert "0 of 1 steps ok" in text and "the script raised:" in text, text
        assert "read" not in r  # the step's read is in steps, not repeated
        verbose, _ = await _text(
            c, "transact", {"connection_id": cid, "steps": [{"micropython": "print(1)"}], "verbose": True}
        )
        write = verbose["write"]  # lean results leave tx_bytes out of a transact's write; verbose has it
        assert write["bytes_written"] > 0 and write["tx_bytes"] >= 2 * write["bytes_written"], write
