"""reply="match" / "tail:N": a wait that returns only the match (and N bytes before it), the cursor
after it and the skipped bytes counted — in read, transact, its steps and framed reads."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from mcp import Client

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from tests.tool_calls import call, error

pytestmark = pytest.mark.anyio

BOOT = (
    b"".join(b"[%5d.000] line of boot log number %d\r\n" % (i, i) for i in range(200)) + b"Hit any key\r\n=> "
)


@pytest.fixture
async def env() -> AsyncIterator[tuple[Client, FakeOpener]]:
    opener = FakeOpener()
    opener.add("dev", responder=lambda d: BOOT if d == b"reset\r" else None)
    async with Client(build_server(ConnectionManager(opener))) as c:
        yield c, opener


async def test_read_returns_only_the_match_and_counts_what_it_skipped(env: tuple[Client, FakeOpener]) -> None:
    c, opener = env
    cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
    opener.devices["dev"].feed(BOOT + b"after")
    r = await c.call_tool(
        "read", {"connection_id": cid, "match": "=> ", "reply": "match", "timeout_ms": 5000}
    )
    sc = r.structured_content
    assert sc is not None and sc["data"] == "=> " and sc["match_index"] == 0
    assert sc["bytes_skipped"] == len(BOOT) - 3 and sc["from_offset"] == len(BOOT) - 3
    assert sc["next_offset"] == len(BOOT)  # the cursor is after the match
    text = r.content[0].text  # type: ignore[union-attr]
    assert f"skipped {len(BOOT) - 3} byte(s) before it" in text and len(text) < 200, text
    rest = await call(c, "read", {"connection_id": cid, "timeout_ms": 2000})
    assert rest["data"] == "after"  # nothing after the match was consumed
    whole = await call(c, "read", {"connection_id": cid, "from": 0, "max_bytes": len(BOOT), "timeout_ms": 0})
    assert whole["data"].encode() == BOOT  # the skipped bytes are still in the ring


async def test_tail_keeps_n_bytes_before_and_no_match_keeps_the_end(env: tuple[Client, FakeOpener]) -> None:
    c, opener = env
    cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
    opener.devices["dev"].feed(BOOT)
    r = await call(
        c, "read", {"connection_id": cid, "from": 0, "match": "=> ", "reply": "tail:13", "timeout_ms": 5000}
    )
    assert r["data"] == "Hit any key\r\n=> " and r["match_index"] == 13 and r["match_offset"] == len(BOOT) - 3
    r = await call(
        c, "read", {"connection_id": cid, "from": 0, "match": "never", "reply": "match", "timeout_ms": 100}
    )
    assert not r["matched"] and r["data"].encode() == BOOT[-256:] and r["bytes_skipped"] == len(BOOT) - 256


async def test_transact_and_its_steps_take_reply(env: tuple[Client, FakeOpener]) -> None:
    c, _ = env
    cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
    r = await call(
        c,
        "transact",
        {"connection_id": cid, "data": "reset\r", "match": "=> ", "reply": "match", "timeout_ms": 5000},
    )
    assert r["read"]["data"] == "=> " and r["read"]["bytes_skipped"] == len(BOOT) - 3
    steps = [
        {"send": "reset\r", "expect": "Hit any key", "reply": "tail:0"},
        {"expect": "=> ", "reply": "match"},
    ]
    r = await call(c, "transact", {"connection_id": cid, "steps": steps, "timeout_ms": 5000})
    assert [s["read"]["data"] for s in r["steps"]] == ["Hit any key", "=> "] and r["steps_ok"]


async def test_a_framed_reply_returns_the_matching_frame(env: tuple[Client, FakeOpener]) -> None:
    c, opener = env
    cid = (await call(c, "open", {"port": "dev", "protocol": "at_command"}))["connection_id"]
    opener.devices["dev"].feed(b"RDY\r\n+CFUN: 1\r\n+CPIN: READY\r\nSMS READY\r\n")
    r = await call(c, "read", {"connection_id": cid, "match": "SMS", "reply": "match", "timeout_ms": 5000})
    assert (
        [f["data"] for f in r["frames"]] == ["SMS READY"]
        and r["frames_skipped"] == 3
        and r["match_index"] == 0
    )


async def test_reply_is_checked(env: tuple[Client, FakeOpener]) -> None:
    c, _ = env
    cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
    assert "needs match" in (await error(c, "read", {"connection_id": cid, "reply": "match"}))["message"]
    for bad in ("all", "tail:", "tail:-1", "tail:x", "tail:999999"):
        e = await error(c, "read", {"connection_id": cid, "match": "x", "reply": bad})
        assert e["code"] == "invalid_argument" and "tail:N" in e["message"], e


async def test_capture_boot_waits_for_the_prompt_and_returns_only_it(env: tuple[Client, FakeOpener]) -> None:
    c, _ = env
    cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
    r = await call(
        c,
        "capture_boot",
        {"connection_id": cid, "send": "reset\r", "match": "=> ", "reply": "tail:13", "timeout_ms": 5000},
    )
    assert r["read"]["data"] == "Hit any key\r\n=> " and r["read"]["bytes_skipped"] == len(BOOT) - 16
