"""Respond rules at an agent's pace: a rule sees what already arrived; standing rules answer from
the first byte whenever the agent gets to its first call; several occurrences answer several times."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeDevice, FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from tests.tool_calls import call, error

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

BANNER = b"U-Boot 2024.01\r\nHit any key to stop autoboot:  3 "


async def _client() -> tuple[Client, FakeDevice, ConnectionManager]:
    opener = FakeOpener()
    dev = opener.add("dev")
    manager = ConnectionManager(opener)
    return Client(build_server(manager)), dev, manager


async def _written(dev: FakeDevice, want: bytes) -> None:
    """Wait until the host wrote exactly ``want``; anything else written on the way fails at once."""
    with anyio.fail_after(5):
        while (got := bytes(dev.written)) != want:
            assert want.startswith(got), f"wrote {got!r}, expected only {want!r}"
            await anyio.sleep(0.01)


async def _received(c: Client, cid: str, n: int) -> None:
    """Wait until the connection has taken ``n`` bytes in from the device (its RX counter)."""
    with anyio.fail_after(5):
        while (await call(c, "get_status", {"connection_id": cid}))["end_offset"] < n:
            await anyio.sleep(0.01)


async def test_read_respond_answers_a_prompt_that_arrived_before_the_call() -> None:
    client, dev, _ = await _client()
    async with client as c:
        cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
        dev.feed(BANNER)  # printed while the agent was thinking
        await _received(c, cid, len(BANNER))  # all of it in before the call that arms the rule
        r = await call(
            c,
            "read",
            {"connection_id": cid, "timeout_ms": 300, "respond": {"on": "Hit any key", "send": " "}},
        )
        assert r["responded"] == 1
        assert bytes(dev.written) == b" "
        log = await call(c, "get_log", {"connection_id": cid})
        assert any(e["type"] == "tx" and e.get("respond") for e in log["events"])


async def test_standing_responder_answers_from_the_first_byte_even_if_the_agent_is_late() -> None:
    client, dev, _ = await _client()
    dev.feed(BANNER)  # the board starts printing the moment the port opens
    async with client as c:
        opened = await call(c, "open", {"port": "dev", "respond": [{"on": "Hit any key", "send": "\r"}]})
        cid = opened["connection_id"]
        await _written(dev, b"\r")  # no read call at all: the engine answered on its own
        dev.feed(b"\r\n=> ")
        r = await call(c, "read", {"connection_id": cid, "match": "=> ", "timeout_ms": 5000})
        assert r["matched"]
        status = await call(c, "get_status", {"connection_id": cid})
        assert status["responders"] == [{"on": "Hit any key", "sent": 1, "times": 1, "standing": True}]
        # a later countdown (times used up) is not answered again: once it is in (and so seen by the
        # standing rule, which the pump runs on each chunk in order), the next rules' answers must follow
        # the first "\r" with nothing between
        dev.feed(BANNER)
        await _received(c, cid, 2 * len(BANNER) + len(b"\r\n=> "))
        # configure replaces the standing rules; [] clears them
        await call(c, "configure", {"connection_id": cid, "defaults": {"respond": [{"on": "login:", "send": "root\r", "times": 2}]}})
        dev.feed(b"login: \r\nlogin: ")
        await _written(dev, b"\rroot\rroot\r")  # two occurrences in one chunk: two answers, no extra "\r"
        await call(c, "configure", {"connection_id": cid, "defaults": {"respond": []}})
        assert (await call(c, "get_status", {"connection_id": cid})).get("responders") is None


async def test_bad_standing_rules_fail_the_open_cleanly() -> None:
    client, _, manager = await _client()
    async with client as c:
        e = await error(c, "open", {"port": "dev", "respond": [{"on": "x"}]})
        assert e["code"] == "invalid_argument"
        assert manager.list() == []


async def test_responder_answers_keep_their_mark_in_captures(tmp_path: object) -> None:
    import json
    from pathlib import Path

    from serial_mcp.store.captures import CaptureStore

    opener = FakeOpener()
    dev = opener.add("dev")
    store = CaptureStore(Path(str(tmp_path)))
    async with Client(build_server(ConnectionManager(opener), captures=store)) as c:
        cid = (await call(c, "open", {"port": "dev", "respond": [{"on": "Hit any key", "send": " "}]}))["connection_id"]
        dev.feed(BANNER)
        await _written(dev, b" ")
        await call(c, "export_log", {"connection_id": cid, "path": "boot.jsonl"})
    events = [json.loads(line) for line in (Path(str(tmp_path)) / "boot.jsonl").read_text().splitlines()[1:]]
    assert any(e["type"] == "tx" and e.get("respond") is True for e in events)


async def test_a_rule_being_armed_sees_only_recent_history() -> None:
    """Priming is bounded (it runs under the connection's lock): a prompt 64 KiB back is old news."""
    from serial_mcp.serial.responder import PRIME_WINDOW

    client, dev, _ = await _client()
    async with client as c:
        cid = (await call(c, "open", {"port": "dev", "rx_buffer_size": 1 << 20}))["connection_id"]
        dev.feed(b"login: " + b"x" * (PRIME_WINDOW + 10))
        await call(c, "read", {"connection_id": cid, "from": "now", "max_bytes": 1, "timeout_ms": 0})
        with anyio.fail_after(5):
            while (await call(c, "get_status", {"connection_id": cid}))["end_offset"] < PRIME_WINDOW + 17:
                await anyio.sleep(0.01)
        r = await call(c, "read", {"connection_id": cid, "timeout_ms": 50, "max_bytes": 16, "respond": {"on": "login:", "send": "root\r"}})
        assert r["responded"] == 0 and bytes(dev.written) == b""
