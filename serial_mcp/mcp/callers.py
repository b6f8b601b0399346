"""Which engine ``Caller`` an MCP request is: one per MCP connection (a stdio client, an HTTP session).

A 2025-11-25 HTTP session is its own caller (its own default cursor, its own connections); stdio
and 2026-07-28 stateless requests carry no session and act as the one local caller. When the SDK
tears an MCP connection down (stdin closed, session deleted or expired, a stateless request over),
every call it still has in flight is cancelled, which also disarms their ``respond`` rules. A
session that ends is then released (``engine.access.release``): the ports it opened are closed
and its default cursor leaves every connection; ``session_ended`` is set when that is done.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import weakref
from contextvars import ContextVar
from typing import Any

import anyio

from serial_mcp.engine.access import LOCAL, Caller, release
from serial_mcp.mcp import sdk_private
from serial_mcp.serial.manager import ConnectionManager

log = logging.getLogger(__name__)

_STATE_KEY = "serial_mcp.caller"
_current: ContextVar[Caller | None] = ContextVar("serial_mcp_caller", default=None)
_request: ContextVar[object] = ContextVar("serial_mcp_request_id", default=None)
_fallback = Caller.local()
_sessions: weakref.WeakValueDictionary[str, Caller] = weakref.WeakValueDictionary()
_ended: dict[str, anyio.Event] = {}  # a live session's "released" event, set (and dropped) at its end
_releasing: set[asyncio.Task[None]] = set()


def session_key(session_id: str) -> str:
    """A short stable key for a session id (the id itself never shows in results or cursor names)."""
    return "s" + hashlib.sha256(session_id.encode()).hexdigest()[:15]


def caller_for(ctx: Any) -> Caller:
    """The caller of the request ``ctx`` (a ServerRequestContext)."""
    conn = sdk_private.client_connection(ctx)
    if conn is None or not hasattr(conn, "state"):
        return _fallback
    caller = conn.state.get(_STATE_KEY)
    if caller is None:
        sid = getattr(conn, "session_id", None)
        caller = Caller(session_key(sid) if sid else LOCAL)
        conn.state[_STATE_KEY] = caller
        if sid:
            _sessions[sid] = caller
            _ended[sid] = anyio.Event()
            conn.exit_stack.push_async_callback(_end_session, sid, caller, _manager_of(ctx))
        else:
            conn.exit_stack.callback(caller.cancel_all)
    assert isinstance(caller, Caller)
    return caller


def _manager_of(ctx: Any) -> ConnectionManager | None:
    """The server's connection manager (its lifespan yields it as ``manager``)."""
    state = getattr(ctx, "lifespan_context", None)
    manager = state.get("manager") if isinstance(state, dict) else None
    return manager if isinstance(manager, ConnectionManager) else None


async def _end_session(session_id: str, caller: Caller, manager: ConnectionManager | None) -> None:
    """The SDK unwinds a session that ended: cancel its calls now, then release what it held.

    The release runs as a task of its own, so the SDK's bound on its clean-up (5 s) cannot cut it
    off halfway and leave a port open with nobody to close it."""
    caller.cancel_all()
    if manager is None:
        _mark_released(session_id)
        return
    task = asyncio.get_running_loop().create_task(_release(session_id, caller, manager))
    _releasing.add(task)
    task.add_done_callback(_releasing.discard)
    await asyncio.shield(task)


async def _release(session_id: str, caller: Caller, manager: ConnectionManager) -> None:
    try:
        await release(manager, caller)
    except Exception:  # a bug: logged; the session is still over
        log.exception("releasing session %s failed", caller.key)
    finally:
        _mark_released(session_id)


def _mark_released(session_id: str) -> None:
    ended = _ended.pop(session_id, None)
    if ended is not None:
        ended.set()


def session_ended(session_id: str) -> anyio.Event | None:
    """Set once session ``session_id`` has been released; None for a session not (or no longer) live."""
    return _ended.get(session_id)


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
