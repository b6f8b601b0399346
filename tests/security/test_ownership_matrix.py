"""The ownership matrix: what session B may do on a connection session A opened (issue 28.8).

Every tool in ``tools/list`` and every argument of its input schema is classified below, as
``test_read_only`` classifies them for ``--read-only``: a tool B is refused whole on A's connection,
an argument that makes an otherwise reading tool write or take control, a reading tool whose other
arguments were reviewed, or an engine-wide tool that takes no connection. A tool or argument added
later that is in none of them fails ``test_the_ownership_matrix``,
so a new writing argument cannot slip past the owner check the way ``read(respond=...)`` did.
Then, over real streamable HTTP with two sessions, B is refused ``not_owner`` for each one, the
same call without the classified argument is allowed, and A's device and state are untouched.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from serial_mcp.store.captures import CaptureStore
from serial_mcp.store.profiles import ProfileStore
from tests.security.http_harness import HttpServer, http_server
from tests.security.test_read_only import REFUSED_TOOLS as READ_ONLY_REFUSED_TOOLS
from tests.tool_calls import call

pytestmark = pytest.mark.anyio

CID = "{cid}"
# Tools B is refused whole on A's connection (writing, driving lines, settings, the log, the
# connection's profile binding, closing), each with a call that would otherwise act.
OWNER_TOOLS: dict[str, dict[str, Any]] = {
    # Whatever read-only mode refuses on a connection is the owner's too (one table, one policy) ...
    **{name: args for name, args in READ_ONLY_REFUSED_TOOLS.items() if "connection_id" in args},
    # ... and so is what controls the connection without writing to the device.
    "close": {"connection_id": CID},
    "save_profile": {"connection_id": CID, "name": "bench-b"},
    "configure": {"connection_id": CID, "defaults": {"baud_rate": 9600}},
    "clear_log": {"connection_id": CID},
}
# Arguments that make an otherwise reading tool write or take control; each call is refused, and
# the same call without that argument is allowed.
OWNER_ARGUMENTS: dict[tuple[str, str], list[dict[str, Any]]] = {
    ("read", "respond"): [
        {"connection_id": CID, "timeout_ms": 0, "respond": {"on": "login:", "send": "EVIL\r"}},
        {"connection_id": CID, "from": "buffer_start", "timeout_ms": 0, "respond": {"on": "x", "send": "y"}},
    ],
    ("lend", "action"): [  # "status" (the default) only looks; lending the port is the owner's
        {"connection_id": CID, "action": "release"},
        {"connection_id": CID, "action": "reclaim"},
    ],
    ("record", "action"): [  # "status" (the default) only looks; start and stop are the owner's
        {"connection_id": CID, "action": "stop"},
        {"connection_id": CID, "action": "start", "path": "b.jsonl"},
    ],
}
# Tools B may use on A's connection, each with the arguments reviewed as only reading (a cursor of
# B's own or a shared name, decoding, the window of a read, the log's paging, a capture file
# written to the operator's capture directory), and a call B makes successfully.
READING_TOOLS: dict[str, tuple[set[str], dict[str, Any]]] = {
    "get_status": ({"connection_id"}, {"connection_id": CID}),
    "read": (
        {"connection_id", "from", "cursor", "timeout_ms", "idle_ms", "max_bytes", "match", "encoding",
         "protocol", "rx_framing", "rx_parser", "max_frames", "strip_ansi", "screen", "frames", "until",
         "summary", "to", "fields", "reply", "verbose",  # issue 26: they shape what a read returns
         "port", "baud_rate"},  # issue 39: another's port is port_busy, as open says; a baud_rate is never changed
        {"connection_id": CID, "cursor": "b-own", "timeout_ms": 0, "screen": {"cols": 40, "rows": 10}},
    ),
    "get_log": ({"connection_id", "encoding", "limit", "payloads", "since", "kinds"}, {"connection_id": CID, "limit": 5}),
    "export_log": ({"connection_id", "note", "path"}, {"connection_id": CID, "path": "b-export.jsonl"}),
    "record": ({"connection_id", "path", "note", "duration_ms", "from"}, {"connection_id": CID}),
    "lend": ({"connection_id", "timeout_ms"}, {"connection_id": CID}),
}  # fmt: skip
# Tools that take no connection: ownership does not apply (opening A's port again is port_busy).
ENGINE_WIDE = {
    "list_ports", "list_connections", "open", "open_profile", "list_profiles", "delete_profile",
    "rollback_profile", "list_captures", "compute_checksum",
    "identify",  # 39: another's port is that port's port_busy answer, as open says
}  # fmt: skip


def _fill(args: dict[str, Any], cid: str) -> dict[str, Any]:
    return {k: (cid if v == CID else v) for k, v in args.items()}


@asynccontextmanager
async def _two_sessions(tmp_path: Path) -> AsyncIterator[tuple[HttpServer, Client, Client]]:
    captures = CaptureStore(tmp_path / "captures")
    (tmp_path / "captures").mkdir()
    profiles = ProfileStore(tmp_path / "profiles.toml")
    async with (
        http_server(captures=captures, profiles=profiles) as srv,
        srv.session() as a,
        srv.session() as b,
    ):
        yield srv, a, b


def _check_classified(tools: dict[str, set[str]]) -> None:
    """Every tool and every argument of ``tools/list`` is in exactly one class above."""
    classified = set(OWNER_TOOLS) | set(READING_TOOLS) | ENGINE_WIDE
    assert set(tools) == classified, f"classify {sorted(set(tools) ^ classified)} for ownership"
    for tool in ENGINE_WIDE:
        assert "connection_id" not in tools[tool], f"{tool} takes a connection now: classify it for ownership"
    for tool in OWNER_TOOLS:
        assert "connection_id" in tools[tool], tool
    for tool, arg in OWNER_ARGUMENTS:
        assert tool in READING_TOOLS and arg in tools[tool], (tool, arg)
    for tool, (harmless, _) in READING_TOOLS.items():
        writing = {a for t, a in OWNER_ARGUMENTS if t == tool}
        unclassified = tools[tool] - harmless - writing
        assert not unclassified, f"classify {tool}({sorted(unclassified)}) for ownership"
        assert not harmless & writing, (tool, harmless & writing)


async def test_the_ownership_matrix(tmp_path: Path) -> None:
    """B, on the connection A opened: refused every writing tool and argument, allowed the rest."""
    async with _two_sessions(tmp_path) as (srv, a, b):
        _check_classified(
            {t.name: set(t.input_schema.get("properties", {})) for t in (await b.list_tools()).tools}
        )
        cid = (await call(a, "open", {"port": "dev"}))["connection_id"]
        await call(a, "save_profile", {"connection_id": cid, "name": "bench-a"})
        await call(a, "record", {"connection_id": cid, "action": "start", "path": "a.jsonl"})
        srv.device.feed(b"login: ")
        await call(a, "read", {"connection_id": cid, "match": "login:", "timeout_ms": 5000})
        (conn,) = srv.manager.list()
        events_before = conn.log.since(0)

        leaks: list[str] = []  # every call B was not refused, so one run names them all

        async def refused(tool: str, args: dict[str, Any], what: str) -> None:
            r = await b.call_tool(tool, _fill(args, cid))
            code = (r.structured_content or {}).get("error", {}).get("code") if r.is_error else "allowed"
            if code != "not_owner":
                leaks.append(f"{what}: {code}")

        for tool, args in OWNER_TOOLS.items():
            await refused(tool, args, tool)
        for (tool, arg), calls in OWNER_ARGUMENTS.items():
            for args in calls:
                await refused(tool, args, f"{tool}({arg}={args[arg]!r})")
                without = {k: v for k, v in _fill(args, cid).items() if k not in (arg, "path")}
                await call(b, tool, without)  # the same call without it only reads: allowed
        assert not leaks, f"session B acted on session A's connection: {leaks}"
        for tool, (_, args) in READING_TOOLS.items():
            await call(b, tool, _fill(args, cid))

        # A's device and A's connection are as A left them
        assert bytes(srv.device.written) == b"" and srv.device.line_events == []
        assert len(srv.device.settings_history) == 1 and not srv.device.closed
        assert srv.manager.list() == [conn] and conn.state == "open"
        assert conn.options.profile == "bench-a" and not conn.responders
        assert conn.recorder is not None and conn.recorder.active and conn.recorder.path.name == "a.jsonl"
        assert conn.log.since(0)[: len(events_before)] == events_before  # not cleared
        assert not (tmp_path / "captures" / "b.jsonl").exists()
        assert [p.name for p in ProfileStore(tmp_path / "profiles.toml").list()] == ["bench-a"]
        # and the owner still may: its own close is not refused
        await call(a, "close", {"connection_id": cid})
