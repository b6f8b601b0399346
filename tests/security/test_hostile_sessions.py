"""Hostile sessions on one streamable-HTTP server (issue 28, items 8-10).

Session B must not write to session A's device through a reading tool, stop A's recording or
rebind A's connection to B's profile; and a session that ends (DELETE, or a client that just goes
away) must not leave behind a port nobody can close, nor a default cursor that fills the
connection's cursor table for good.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from serial_mcp.store.captures import CaptureStore
from serial_mcp.store.profiles import ProfileStore
from tests.security.http_harness import http_server
from tests.tool_calls import call, error

pytestmark = pytest.mark.anyio

EVIL = {"on": "login:", "send": "EVIL\r"}


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
