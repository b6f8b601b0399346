"""Hostile sessions on one streamable-HTTP server (issue 28, items 8-10).

Session B must not write to session A's device through a reading tool, stop A's recording or
rebind A's connection to B's profile; and a session that ends (DELETE, or a client that just goes
away) must not leave behind a port nobody can close, nor a default cursor that fills the
connection's cursor table for good.
"""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import pytest

from serial_mcp.engine import access
from serial_mcp.engine.access import Caller
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.store.captures import CaptureStore
from serial_mcp.store.profiles import ProfileStore
from tests.security.http_harness import HttpServer, http_server
from tests.tool_calls import call, error

pytestmark = pytest.mark.anyio

EVIL = {"on": "login:", "send": "EVIL\r"}


def _closed_event(srv: HttpServer) -> anyio.Event:
    """Set when the manager closes a connection (its observers are told on the loop)."""
    closed = anyio.Event()

    def observe(what: str, conn: Connection) -> None:
        if what == "close":
            closed.set()

    srv.manager.observers.append(observe)
    return closed


# --- item 8: read(respond=...) is a write ---------------------------------------------------------


async def test_read_with_respond_cannot_write_to_another_sessions_device() -> None:
    async with http_server() as srv, srv.session() as a, srv.session() as b:
        cid = (await call(a, "open", {"port": "dev"}))["connection_id"]
        srv.device.feed(b"login: ")  # already arrived: an accepted rule would answer it at once
        got = await call(b, "read", {"connection_id": cid, "match": "login: ", "timeout_ms": 5000})
        assert got["data"] == "login: "  # B may read A's device ...
        for args in (
            {"connection_id": cid, "timeout_ms": 0, "respond": EVIL},
            {"connection_id": cid, "match": "never", "timeout_ms": 300, "respond": {**EVIL, "times": 5}},
            {"connection_id": cid, "from": "buffer_start", "timeout_ms": 0, "respond": EVIL},
        ):
            e = await error(b, "read", args)  # ... but not answer it
            assert e["code"] == "not_owner", e
        assert not any(c.responders for c in srv.manager.list())
        srv.device.feed(b"\r\nlogin: ")
        await call(a, "read", {"connection_id": cid, "match": "login: ", "timeout_ms": 5000})
        assert bytes(srv.device.written) == b""
        # the owner's own rule still answers
        await call(
            a, "read", {"connection_id": cid, "from": "buffer_start", "timeout_ms": 0, "respond": EVIL}
        )
        assert bytes(srv.device.written) == b"EVIL\r"


# --- item 9: record and save_profile are the owner's ---------------------------------------------


async def test_another_session_cannot_stop_or_start_a_recording(tmp_path: Path) -> None:
    async with http_server(captures=CaptureStore(tmp_path)) as srv, srv.session() as a, srv.session() as b:
        cid = (await call(a, "open", {"port": "dev"}))["connection_id"]
        await call(a, "record", {"connection_id": cid, "action": "start", "path": "a.jsonl"})
        e = await error(b, "record", {"connection_id": cid, "action": "stop"})
        assert e["code"] == "not_owner", e
        seen = await call(b, "record", {"connection_id": cid})  # looking is reading
        assert seen["recording"] is True and seen["path"] == "a.jsonl"
        srv.device.feed(b"still recorded\n")
        await call(a, "read", {"connection_id": cid, "match": "\n", "timeout_ms": 5000})
        stopped = await call(a, "record", {"connection_id": cid, "action": "stop"})  # A's own stop
        assert stopped["recording"] is False and stopped["path"] == "a.jsonl"
        assert stopped["stopped_reason"] == "stopped" and stopped["events_written"] >= 1
        # starting a recording on A's connection would take it from A (one recorder per connection)
        e = await error(b, "record", {"connection_id": cid, "action": "start", "path": "b.jsonl"})
        assert e["code"] == "not_owner", e
        assert not (tmp_path / "b.jsonl").exists()
        await call(a, "record", {"connection_id": cid, "action": "start", "path": "a2.jsonl"})


async def test_another_session_cannot_rebind_a_connection_to_its_profile(tmp_path: Path) -> None:
    store = ProfileStore(tmp_path / "profiles.toml")
    async with http_server(profiles=store) as srv, srv.session() as a, srv.session() as b:
        cid = (await call(a, "open", {"port": "dev"}))["connection_id"]
        await call(a, "save_profile", {"connection_id": cid, "name": "bench-a"})
        (conn,) = srv.manager.list()
        assert conn.options.profile == "bench-a"
        e = await error(b, "save_profile", {"connection_id": cid, "name": "bench-b"})
        assert e["code"] == "not_owner", e
        e = await error(b, "save_profile", {"connection_id": cid, "name": "bench-a", "overwrite": True})
        assert e["code"] == "not_owner", e
        assert conn.options.profile == "bench-a"  # still A's profile
        assert [p.name for p in store.list()] == ["bench-a"] and store.get("bench-a").revision == 1  # type: ignore[union-attr]


# --- item 10: what a session leaves behind ------------------------------------------------------


async def test_a_deleted_session_closes_its_port_so_another_session_can_open_it() -> None:
    async with http_server() as srv:
        async with srv.session() as a:
            await call(a, "open", {"port": "dev"})
        # the DELETE is answered once the session's connections are closed
        assert srv.manager.list() == [] and srv.device.closed
        async with srv.session() as b:
            cid = (await call(b, "open", {"port": "dev"}))["connection_id"]
            srv.device.feed(b"hello B\n")
            got = await call(b, "read", {"connection_id": cid, "match": "\n", "timeout_ms": 5000})
            assert got["data"] == "hello B\n"
            await call(b, "close", {"connection_id": cid})


async def test_a_session_whose_client_went_away_releases_its_port() -> None:
    """No DELETE: the client just disappears. The server ends the session when it has been idle
    (the SDK's session_idle_timeout, shortened here) and closes what it opened."""
    async with http_server(session_idle_timeout=0.5) as srv:
        closed = _closed_event(srv)
        async with srv.session(delete=False) as a:
            await call(a, "open", {"port": "dev"})
        with anyio.fail_after(20):
            await closed.wait()
        assert srv.manager.list() == [] and srv.device.closed
        async with srv.session() as b:
            await call(b, "open", {"port": "dev"})


async def test_a_shared_connection_outlives_its_session_and_anyone_may_close_it() -> None:
    """open(share="write") shared it with every session: it stays open when its opener goes, and
    belongs to nobody (any session may write and close it, as before), while what the session
    kept to itself is closed."""
    async with http_server() as srv, srv.session() as b:
        opener = srv.manager.opener
        assert isinstance(opener, FakeOpener)
        dev2 = opener.add("dev2")
        async with srv.session() as a:
            await call(a, "open", {"port": "dev2"})
            shared = (await call(a, "open", {"port": "dev", "share": "write"}))["connection_id"]
            await call(b, "read", {"connection_id": shared, "timeout_ms": 0})
        assert [c.id for c in srv.manager.list()] == [shared] and dev2.closed
        status = await call(b, "get_status", {"connection_id": shared})
        assert status["state"] == "open" and status["owner"] == "nobody"
        await call(b, "write", {"connection_id": shared, "data": "from B"})
        assert bytes(srv.device.written) == b"from B"
        await call(b, "close", {"connection_id": shared})
        assert srv.manager.list() == []


@pytest.mark.slow  # over a second: the full suite runs it, the fast lane does not
async def test_seventy_short_sessions_do_not_fill_a_shared_connections_cursor_table() -> None:
    """Each visitor reads with its own default cursor, then leaves: its cursor goes with it, so the
    connection's 64-cursor table never fills (before, the 64th visitor could not read any more)."""
    async with http_server() as srv, srv.session() as owner:
        cid = (await call(owner, "open", {"port": "dev"}))["connection_id"]
        (conn,) = srv.manager.list()
        for i in range(70):
            srv.device.feed(f"line {i}\n".encode())
            async with srv.session() as visitor:
                args = {"connection_id": cid, "match": f"line {i}\n", "timeout_ms": 5000}
                assert (await call(visitor, "read", args))["matched"]
        async with srv.session() as late:
            got = await call(late, "read", {"connection_id": cid, "match": "line 69\n", "timeout_ms": 5000})
            assert got["data"].startswith("line 0\n") and got["matched"]  # a new cursor, from the start
            status = await call(late, "get_status", {"connection_id": cid})
            assert set(status["cursors"]) == {"default"}
        assert list(conn.rx.cursors.positions()) == ["default"]  # only the local default is left


async def test_a_port_taken_by_a_call_that_outlived_its_session_is_released_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A call of the ended session is stuck in a thread past the wait for its calls (an open of a
    slow port): the session is released without it, and once it ends, the port it took is closed
    too (an open makes its caller the owner right after the port opened, with no await between)."""
    monkeypatch.setattr(access, "SETTLE_S", 0.05)
    passes: list[tuple[list[str], list[str]]] = []
    first_pass = anyio.Event()
    let_go = access._let_go

    async def counted(manager: ConnectionManager, caller: Caller) -> tuple[list[str], list[str]]:
        passes.append(await let_go(manager, caller))
        first_pass.set()
        return passes[-1]

    monkeypatch.setattr(access, "_let_go", counted)
    opener = FakeOpener()
    device = opener.add("dev")
    manager = ConnectionManager(opener)
    caller = Caller("s0123456789abcde")
    conn = await manager.open("dev")  # the port the stuck open is about to hand to its caller
    in_thread, unblock = threading.Event(), threading.Event()

    def slow_port() -> None:
        in_thread.set()
        unblock.wait(30)

    async def stuck_open() -> None:
        with caller.call():
            await anyio.to_thread.run_sync(slow_port)
            conn.hold_for(caller.key)

    released: list[tuple[list[str], list[str]]] = []

    async def release() -> None:
        released.append(await access.release(manager, caller))

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(stuck_open)
            await anyio.to_thread.run_sync(in_thread.wait, 30)
            tg.start_soon(release)
            await first_pass.wait()
            assert passes == [([], [])] and manager.list() == [conn]  # not yet its port
            unblock.set()
    assert released == [([conn.id], [])] and passes[-1] == ([conn.id], [])
    assert manager.list() == [] and conn.state == "closed" and device.closed
