"""``lend``: release and reclaim over the fake opener, and the watch that decides when a lent node
is free again (issue 23.2)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from mcp import Client

from serial_mcp.core.lend_watch import LendWatch
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.fake import FakeDevice, FakeOpener
from serial_mcp.serial.lending import Lend
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.store.captures import CaptureStore
from tests.tool_calls import call, error

pytestmark = pytest.mark.anyio


async def wait_state(conn: Connection, state: str) -> None:
    with anyio.fail_after(30):
        while conn.state != state:
            await conn.wait_change(30)


@pytest.fixture
async def env() -> AsyncIterator[tuple[Client, ConnectionManager, FakeDevice]]:
    opener = FakeOpener()
    dev = opener.add("board")
    manager = ConnectionManager(opener)
    async with Client(build_server(manager)) as c:
        yield c, manager, dev


# --- the watch (pure) ---------------------------------------------------------------------------


def test_nobody_took_it_keeps_it_lent() -> None:
    w = LendWatch(frozenset({10}))
    assert [w.observe(frozenset({10}), t) for t in (0.0, 5.0, 500.0)] == ["lent"] * 3


def test_a_borrower_that_left_frees_it_after_the_grace() -> None:
    w = LendWatch(frozenset({10}), grace_s=0.5)
    assert w.observe(frozenset({10, 42}), 1.0) == "lent"
    assert w.observe(frozenset({10}), 2.0) == "lent"  # the grace starts
    assert w.free_at() == 2.5
    assert w.observe(frozenset({10}), 2.4) == "lent"
    assert w.observe(frozenset({10}), 2.5) == "free"
    assert w.borrowers_seen == {42}


def test_a_reopen_within_the_grace_keeps_it_lent() -> None:
    w = LendWatch(frozenset(), grace_s=0.5)
    w.opened()
    w.closed()
    assert w.observe(frozenset(), 1.0) == "lent"
    w.opened()  # avrdude after the 1200-baud touch, esptool between stages
    assert w.free_at() is None
    assert w.observe(frozenset(), 1.6) == "lent", "still open: not free, whatever the scan shows"
    w.closed()
    assert w.observe(frozenset(), 1.7) == "lent"
    assert w.observe(frozenset(), 2.2) == "free"


def test_an_open_the_scan_cannot_see_still_holds_it() -> None:
    """A borrower of another user (sudo avrdude): its /proc entry is not readable, its open is."""
    w = LendWatch(frozenset(), grace_s=0.1)
    w.opened()
    assert [w.observe(frozenset(), t) for t in (1.0, 2.0, 9.0)] == ["lent"] * 3


# --- the tool -----------------------------------------------------------------------------------


async def test_release_keeps_everything_and_reclaim_continues_the_offsets(
    env: tuple[Client, ConnectionManager, FakeDevice],
) -> None:
    c, _manager, dev = env
    cid = (await call(c, "open", {"port": "board"}))["connection_id"]
    dev.feed(b"hello\n")
    await call(c, "read", {"connection_id": cid, "match": "\n", "timeout_ms": 5000})
    r = await call(c, "lend", {"connection_id": cid, "action": "release", "timeout_ms": 600_000})
    assert r["state"] == "released" and r["end_offset"] == 6
    assert r["lend"]["watching"] is False, "a fake port has no node to watch"
    assert dev.closed, "the OS handle is closed: another program can open the node"
    status = await call(c, "get_status", {"connection_id": cid})
    assert status["state"] == "released" and status["lend"]["reclaim_in_ms"] > 0
    again = await error(c, "lend", {"connection_id": cid, "action": "release"})
    assert again["code"] == "not_connected" and "reclaim" in again["message"]
    refused = await error(c, "read", {"connection_id": cid, "timeout_ms": 0})
    assert refused["code"] == "port_released" and 'lend(action="reclaim")' in refused["message"]
    back = await call(c, "lend", {"connection_id": cid, "action": "reclaim"})
    assert back["state"] == "open" and back["lend"] is None and dev.opens == 2
    dev.feed(b"after")
    r2 = await call(c, "read", {"connection_id": cid, "match": "after", "timeout_ms": 5000})
    assert r2["from_offset"] == 6 and r2["data"] == "after"
    kinds = [
        e["type"] for e in (await call(c, "get_log", {"connection_id": cid}))["events"] if e["type"] != "rx"
    ]
    assert kinds == ["open", "release", "reclaim"]
    again = await call(c, "lend", {"connection_id": cid, "action": "reclaim"})  # already back: a no-op
    assert again["state"] == "open" and dev.opens == 2


async def test_the_timeout_takes_the_port_back(env: tuple[Client, ConnectionManager, FakeDevice]) -> None:
    c, manager, _dev = env
    cid = (await call(c, "open", {"port": "board"}))["connection_id"]
    await call(c, "lend", {"connection_id": cid, "action": "release", "timeout_ms": 50})
    await wait_state(manager.get(cid), "open")
    log = (await call(c, "get_log", {"connection_id": cid}))["events"]
    assert log[-1]["type"] == "reclaim" and log[-1]["reason"] == "timeout"


async def test_a_reclaim_that_cannot_reopen_keeps_trying(
    env: tuple[Client, ConnectionManager, FakeDevice],
) -> None:
    """After a flash the board re-enumerates: the node is missing for a while."""
    c, manager, dev = env
    cid = (await call(c, "open", {"port": "board"}))["connection_id"]
    await call(c, "lend", {"connection_id": cid, "action": "release", "timeout_ms": 600_000})
    dev.present = False
    r = await call(c, "lend", {"connection_id": cid, "action": "reclaim"})
    assert r["state"] == "reconnecting"
    dev.plug_in()
    await wait_state(manager.get(cid), "open")


async def test_a_watched_borrower_that_leaves_gives_the_port_back(
    env: tuple[Client, ConnectionManager, FakeDevice],
) -> None:
    c, manager, _dev = env
    cid = (await call(c, "open", {"port": "board"}))["connection_id"]
    conn = manager.get(cid)
    scans: list[frozenset[int]] = [frozenset(), frozenset({4242}), frozenset({4242})]

    def scan(path: str) -> frozenset[int]:
        return scans.pop(0) if scans else frozenset()

    lend = Lend(conn, 600, scan=scan, interval_s=0.01, events=False)
    await lend.start()
    await wait_state(conn, "open")
    last = (await call(c, "get_log", {"connection_id": cid}))["events"][-1]
    assert last["type"] == "reclaim" and last["reason"] == "holder_left" and last["borrowers"] == [4242]


async def test_arguments_are_refused_cleanly(env: tuple[Client, ConnectionManager, FakeDevice]) -> None:
    c, manager, dev = env
    cid = (await call(c, "open", {"port": "board"}))["connection_id"]
    for args, code in (
        ({"action": "lend"}, "invalid_argument"),
        ({"action": "release", "timeout_ms": 0}, "invalid_argument"),
        ({"action": "release", "timeout_ms": 10**9}, "invalid_argument"),
        ({"action": "release", "timeout_ms": True}, "invalid_argument"),
        ({"action": "reclaim", "timeout_ms": 5}, "invalid_argument"),
        ({"timeout_ms": 5}, "invalid_argument"),
        ({"action": "release", "timout_ms": 5}, "invalid_argument"),
    ):
        e = await error(c, "lend", {"connection_id": cid, **args})
        assert e["code"] == code, (args, e)
    assert manager.get(cid).state == "open" and dev.opens == 1, "a refused call changed nothing"


async def test_closing_a_released_connection_ends_the_lend(
    env: tuple[Client, ConnectionManager, FakeDevice],
) -> None:
    c, manager, dev = env
    cid = (await call(c, "open", {"port": "board"}))["connection_id"]
    conn = manager.get(cid)
    await call(c, "lend", {"connection_id": cid, "action": "release", "timeout_ms": 600_000})
    task = conn.lend._task
    await call(c, "close", {"connection_id": cid})
    assert conn.lend is None and task is not None
    await anyio.sleep(0)
    assert task.done() and dev.opens == 1, "nothing reopened after the close"


async def test_read_only_refuses_release() -> None:
    opener = FakeOpener()
    dev = opener.add("board")
    async with Client(build_server(ConnectionManager(opener), read_only=True)) as c:
        cid = (await call(c, "open", {"port": "board"}))["connection_id"]
        e = await error(c, "lend", {"connection_id": cid, "action": "release"})
        assert e["code"] == "read_only_mode"
        assert (await call(c, "lend", {"connection_id": cid}))["state"] == "open"  # status only looks
    assert dev.opens == 1 and not dev.line_events


async def test_the_python_api_releases_and_reclaims() -> None:
    from serial_mcp.api import Engine, SyncEngine
    from serial_mcp.errors import PortError

    opener = FakeOpener()
    dev = opener.add("dev")
    async with Engine(opener=opener) as eng:
        conn = await eng.open("dev")
        lent = await conn.release(timeout_ms=600_000)
        assert lent.state == "released" and lent.lend is not None
        with pytest.raises(PortError) as caught:
            await conn.read(timeout_ms=0)
        assert caught.value.code == "port_released"
        assert (await conn.reclaim()).state == "open" and dev.opens == 2
    with SyncEngine(opener=opener) as sync:
        sconn = sync.open("dev")
        assert sconn.release().state == "released"
        assert sconn.lend().lend is not None  # status
        assert sconn.reclaim().state == "open"


async def test_the_recording_goes_on_across_the_lend_with_markers(tmp_path: Path) -> None:
    opener = FakeOpener()
    dev = opener.add("board")
    server = build_server(ConnectionManager(opener), captures=CaptureStore(tmp_path))
    async with Client(server) as c:
        cid = (await call(c, "open", {"port": "board", "record": "lend.jsonl"}))["connection_id"]
        dev.feed(b"one")
        await call(c, "read", {"connection_id": cid, "match": "one", "timeout_ms": 5000})
        await call(c, "lend", {"connection_id": cid, "action": "release"})
        await call(c, "lend", {"connection_id": cid, "action": "reclaim"})
        dev.feed(b"two")
        await call(c, "read", {"connection_id": cid, "match": "two", "timeout_ms": 5000})
        await call(c, "record", {"connection_id": cid, "action": "stop"})
    lines = [json.loads(line) for line in (tmp_path / "lend.jsonl").read_text().splitlines()]
    shown = [e.get("label") or e["type"] for e in lines if e.get("type") in ("marker", "rx")]
    assert shown == ["rx", "release", "reclaim", "rx"], shown
    rx = [e for e in lines if e.get("type") == "rx"]
    assert [(e["offset"], e["text"]) for e in rx] == [(0, "one"), (3, "two")], "offsets carry on"


def test_dropped_events_leave_the_scans_to_decide() -> None:
    w = LendWatch(frozenset(), grace_s=0.1)
    w.opened()
    w.lost_count()  # the close was among the dropped events
    assert w.observe(frozenset(), 1.0) == "lent"
    assert w.observe(frozenset(), 1.1) == "free"
