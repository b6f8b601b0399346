"""Who is calling, and what they may do: callers, connection ownership, read-only mode.

Every operation runs for a ``Caller``. One stdio server has one caller (``Caller.local()``); an HTTP
server has one per MCP session. A connection belongs to the caller that opened it: others may list
it and read it through their own cursors, but writing, driving its lines, changing its settings or
closing it needs the owner's opt-in (``open(share="write")``). Each caller has its own ``default``
cursor, so two agents never consume each other's replies; named cursors stay shared by name, which
is how agents cooperate on purpose.

When a caller goes away for good (an HTTP session deleted, or ended by the server after its
client went quiet), ``release`` lets go of what it held: its calls are cancelled and waited for,
each connection it opened is closed (``port_busy`` never outlives the session), except one it
shared with ``share="write"``: that one stays open for the sessions using it and belongs to
nobody (anyone may still write and close it, as they could before); and its own default cursor
leaves every connection's cursor table. Named cursors are shared by name and stay.

``AccessPolicy`` also carries the server's read-only switch: in read-only mode nothing may put a
byte on the wire, change a line or a setting, or write to the profile store.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import anyio

from serial_mcp import messages
from serial_mcp.core.cursors import DEFAULT_CURSOR
from serial_mcp.errors import AccessError, ErrorCode, InvalidArgument, SerialMcpError

if TYPE_CHECKING:
    from serial_mcp.serial.manager import ConnectionManager

log = logging.getLogger(__name__)

LOCAL = "local"
NOBODY = "nobody"  # the owner of a shared connection whose opener is gone (no caller has this key)
SETTLE_S = 3.0  # how long a departed caller's cancelled calls may take to end before its release
LATE_SETTLE_S = 120.0  # then how long one stuck in a thread is waited for, to release once more
Share = Literal["read", "write"]
Need = Literal["read", "write", "control", "close"]
_DEFAULT_SEP = "@"  # never valid in a user's cursor name, so a session's default cannot collide


@dataclass(eq=False)
class Caller:
    """One client of the engine. ``key`` identifies it; calls in flight can be cancelled together
    (when the transport learns the client is gone). Used on the event loop only."""

    key: str = LOCAL
    _scopes: set[anyio.CancelScope] = field(default_factory=set, repr=False)
    _requests: dict[object, anyio.CancelScope] = field(default_factory=dict, repr=False)
    _idle: anyio.Event | None = field(default=None, repr=False)  # set when its last call ends
    gone: bool = False

    @classmethod
    def local(cls) -> Caller:
        return cls(LOCAL)

    @property
    def is_local(self) -> bool:
        return self.key == LOCAL

    def cursor(self, name: str | None) -> str:
        """The stored cursor name for what this caller calls ``name`` (``None`` = its default)."""
        if name is None:
            name = DEFAULT_CURSOR
        if not isinstance(name, str) or not name.strip():
            raise InvalidArgument(messages.CURSOR_EMPTY)
        if _DEFAULT_SEP in name:  # reserved for sessions' own defaults: never named by a client
            raise InvalidArgument(messages.CURSOR_BAD_NAME.format(name=name[:80]))
        if name == DEFAULT_CURSOR and not self.is_local:
            return f"{DEFAULT_CURSOR}{_DEFAULT_SEP}{self.key}"
        return name

    def shown_cursor(self, stored: str) -> str | None:
        """How a stored cursor name looks to this caller; None hides another session's default."""
        if stored == DEFAULT_CURSOR:
            return stored if self.is_local else None
        if _DEFAULT_SEP not in stored:
            return stored
        return DEFAULT_CURSOR if stored == self.cursor(None) else None

    @contextmanager
    def call(self, request_id: object = None) -> Iterator[anyio.CancelScope]:
        """Run one call of this caller inside a scope that ``cancel_all`` (or ``cancel_request``
        with the same ``request_id``) can end."""
        with anyio.CancelScope() as scope:
            if self.gone:
                scope.cancel()
            self._scopes.add(scope)
            if request_id is not None:
                self._requests[request_id] = scope
            try:
                yield scope
            finally:
                self._scopes.discard(scope)
                if request_id is not None and self._requests.get(request_id) is scope:
                    del self._requests[request_id]
                if not self._scopes and self._idle is not None:
                    self._idle.set()

    async def settle(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` seconds) until none of this caller's calls runs; True if so."""
        with anyio.move_on_after(timeout):
            while self._scopes:
                self._idle = anyio.Event()
                await self._idle.wait()
        return not self._scopes

    def cancel_request(self, request_id: object) -> bool:
        """The client dropped the one request ``request_id``: end that call only."""
        scope = self._requests.get(request_id)
        if scope is None:
            return False
        scope.cancel()
        return True

    def cancel_all(self) -> int:
        """The client went away: end every call it has in flight (their responders disarm with them)."""
        self.gone = True
        scopes = list(self._scopes)
        for scope in scopes:
            scope.cancel()
        return len(scopes)


@dataclass(frozen=True, slots=True)
class AccessPolicy:
    """Server-wide rules: read-only mode."""

    read_only: bool = False

    def require_writable(self, what: str) -> None:
        """Refuse anything that would write to a device, change a line or setting, or a stored profile."""
        if self.read_only:
            raise AccessError(ErrorCode.READ_ONLY_MODE, messages.READ_ONLY.format(tool=what))

    def refuse_argument(self, tool: str, arg: str, why: str) -> None:
        """Refuse one argument of an otherwise reading operation (``read(respond=...)``)."""
        if self.read_only:
            raise AccessError(
                ErrorCode.READ_ONLY_MODE, messages.READ_ONLY_ARG.format(tool=tool, arg=arg, why=why)
            )


def require_access(caller: Caller, owner: str, share: Share, need: Need, conn_id: str) -> None:
    """Reading is open to every caller; the rest needs ownership or ``share="write"``."""
    if need == "read" or caller.key == owner or share == "write":
        return
    raise AccessError(
        ErrorCode.NOT_OWNER, messages.NOT_OWNER.format(id=conn_id, action=need), connection_id=conn_id
    )


async def release(manager: ConnectionManager, caller: Caller) -> tuple[list[str], list[str]]:
    """``caller`` is gone for good: end its calls, then close the connections it opened (those it
    shared with ``share="write"`` stay open and pass to ``NOBODY``) and drop its default cursor
    from every connection. Returns the ids closed and the ids handed over. The local caller (stdio,
    stateless HTTP requests) is never released: its connections close with the server."""
    if caller.is_local:
        return [], []
    caller.cancel_all()
    settled = await caller.settle(SETTLE_S)
    closed, handed = await _let_go(manager, caller)
    if not settled:  # a call stuck in a thread (an open, say) may still leave a port behind
        log.warning("session %s: a call still runs after %.0f s; released what it held", caller.key, SETTLE_S)
        await caller.settle(LATE_SETTLE_S)
        late_closed, late_handed = await _let_go(manager, caller)
        closed, handed = closed + late_closed, handed + late_handed
    if closed or handed:
        log.info("session %s ended: closed %s, handed over %s", caller.key, closed or "-", handed or "-")
    return closed, handed


async def _let_go(manager: ConnectionManager, caller: Caller) -> tuple[list[str], list[str]]:
    closed: list[str] = []
    handed: list[str] = []
    own_default = caller.cursor(None)
    for conn in manager.list():
        conn.forget_cursor(own_default)
        if conn.owner != caller.key:
            continue
        if conn.share == "write":
            conn.hold_for(NOBODY)
            handed.append(conn.id)
            continue
        try:
            await manager.close(conn.id)
        except SerialMcpError as exc:  # closed meanwhile (the server shutting down)
            log.info("session %s: closing %s: %s", caller.key, conn.id, exc.message)
            continue
        closed.append(conn.id)
    return closed, handed
