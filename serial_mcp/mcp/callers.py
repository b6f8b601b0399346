"""Which engine ``Caller`` an MCP request is: one per MCP connection (a stdio client, an HTTP session).

A 2025-11-25 HTTP session is its own caller (its own default cursor, its own connections); stdio
and 2026-07-28 stateless requests carry no session and act as the one local caller. When the SDK
tears an MCP connection down (stdin closed, session deleted or expired, a stateless request over),
every call it still has in flight is cancelled, which also disarms their ``respond`` rules.
"""

from __future__ import annotations

import hashlib
import weakref
from contextvars import ContextVar
from typing import Any

from serial_mcp.engine.access import LOCAL, Caller

_STATE_KEY = "serial_mcp.caller"
_current: ContextVar[Caller | None] = ContextVar("serial_mcp_caller", default=None)
_request: ContextVar[object] = ContextVar("serial_mcp_request_id", default=None)
_fallback = Caller.local()
_sessions: weakref.WeakValueDictionary[str, Caller] = weakref.WeakValueDictionary()


def session_key(session_id: str) -> str:
    """A short stable key for a session id (the id itself never shows in results or cursor names)."""
    return "s" + hashlib.sha256(session_id.encode()).hexdigest()[:15]


def caller_for(ctx: Any) -> Caller:
    """The caller of the request ``ctx`` (a ServerRequestContext)."""
    session = getattr(ctx, "session", None)
    conn = getattr(session, "_connection", None)  # the per-client MCP connection (no public accessor)
    if conn is None or not hasattr(conn, "state"):
        return _fallback
    caller = conn.state.get(_STATE_KEY)
    if caller is None:
        sid = getattr(conn, "session_id", None)
        caller = Caller(session_key(sid) if sid else LOCAL)
        conn.state[_STATE_KEY] = caller
        if sid:
            _sessions[sid] = caller
        conn.exit_stack.callback(caller.cancel_all)
    assert isinstance(caller, Caller)
    return caller


def bind(caller: Caller, request_id: object = None) -> None:
    _current.set(caller)
    _request.set(request_id)


def current_request() -> object:
    """The JSON-RPC id of the request running now (None outside a request)."""
    return _request.get()


def cancel_request(session_id: str, request_id: object) -> bool:
    """An HTTP client dropped the stream of request ``request_id`` of session ``session_id``."""
    caller = _sessions.get(session_id)
    return caller.cancel_request(request_id) if caller is not None else False


def current() -> Caller:
    """The caller of the tool call running now (set by the registry's middleware)."""
    return _current.get() or _fallback
