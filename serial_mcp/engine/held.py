"""Held connections (issue 39): a question to a port is one call.

``read``, ``write``, ``transact`` and ``capture_boot`` take ``port`` instead of ``connection_id``
(``options.OnPort``). The call uses the caller's own connection to that port, or opens one exactly
as ``open`` does (``opening.Opener``: allowlist, read-only, ownership, profiles); a connection opened
so is *held*: its id and ``held_note`` are in the result of every call on it, and it closes by
itself once no call used it for ``Services.held_idle_s`` (60 s unless ``--held-idle-s`` says
otherwise), so a flasher is not locked out by a port the agent never knowingly kept. ``open`` on
that port adopts it: the same connection, kept from then on.

The idle close is one task per held connection, asleep in a cancel scope whose deadline is the end
of its idle time: a call moves the deadline (to infinity while it runs, then to its end plus the
idle time), adopting or closing the connection cancels the scope. Nothing polls, nothing holds the
loop, and a connection closed any other way (``close``, a departed session, shutdown) ends its task
through the manager's observers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TypeVar

import anyio

from serial_mcp import messages
from serial_mcp.core.port_url import check_text
from serial_mcp.engine import results
from serial_mcp.engine.access import Caller
from serial_mcp.engine.opening import Opener
from serial_mcp.engine.options import SERIAL_FIELDS, OnPort, OpenOptions, names
from serial_mcp.engine.services import Hold, Services
from serial_mcp.errors import ErrorCode, InvalidArgument, SerialMcpError
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.manager import port_key
from serial_mcp.serial.policy import resolve_port

log = logging.getLogger(__name__)
T = TypeVar("T")

# open()'s options an adopting open may give: the port and its settings (which must be the held
# connection's); any other option is one it cannot honour, the port being open already
_AS_OPENED = frozenset({"port", "profile_mode", *SERIAL_FIELDS})


async def port_connection(
    svc: Services, caller: Caller, port: str, settings: Mapping[str, object], *, protocol: str | None = None
) -> tuple[Connection, bool]:
    """The caller's open connection to ``port`` (``settings`` given must be its own), or a new held
    one opened through ``Opener`` with them (True: opened now)."""
    check_text(port)
    conn = _on_port(svc, port)
    if conn is None and "://" not in port and not port.startswith("/"):  # a serial number, a by-id name
        resolved = await anyio.to_thread.run_sync(_resolved, port, svc)
        conn = _on_port(svc, resolved) if resolved else None
    if conn is not None and conn.owner == caller.key:
        _same_settings(conn, settings)
        return conn, False
    # another caller's connection: open says port_busy, exactly as it would to this caller's open
    fields = {**settings, "protocol": protocol}
    try:
        opened = await Opener(svc).open(port, fields, caller=caller)
    except SerialMcpError as exc:  # a call of this caller's opened it meanwhile: that one it is
        if exc.code == ErrorCode.PORT_BUSY:
            await svc.manager.opened(port)  # an open under way: its connection, once registered
        conn = _on_port(svc, port) if exc.code == ErrorCode.PORT_BUSY else None
        if conn is None or conn.owner != caller.key:
            raise
        _same_settings(conn, settings)
        return conn, False
    _hold(svc, opened.conn, (opened.profile, opened.action, opened.hint))
    return opened.conn, True


def held_note(svc: Services, conn: Connection) -> str | None:
    """The result's "held" text (naming the connection), None if it is not held."""
    hold = svc.held.get(conn.id)
    if hold is None or hold.conn is not conn:
        return None
    return messages.HELD_NOTE.format(id=conn.id, s=hold.idle_s)


def touch(svc: Services, conn: Connection) -> None:
    """Restart ``conn``'s idle clock (if it is held)."""
    hold = svc.held.get(conn.id)
    if hold is not None and hold.conn is conn:
        hold.restart()


# --- the operations' side (operations.invoke) ------------------------------------------------------


async def target(
    svc: Services, caller: Caller, name: str, writes: bool, connection_id: str | None, opts: OnPort
) -> tuple[str, bool]:
    """The connection id a call on ``connection_id`` and/or ``opts.port`` runs on (True: opened now,
    held). Exactly one of the two is needed; both must name the same connection."""
    settings = {"baud_rate": opts.baud_rate} if opts.baud_rate is not None else {}
    protocol = getattr(opts, "protocol", None)
    if opts.port is None:
        if connection_id is None:
            raise InvalidArgument(messages.PORT_OR_CONNECTION.format(tool=name))
        _same_settings(svc.manager.get(connection_id), settings)  # its own errors, as ever
        return connection_id, False
    check_text(opts.port)  # a NUL or a lone surrogate: invalid_argument before any path lookup
    if connection_id is not None:  # both: the same connection, used as by its id
        conn = svc.manager.get(connection_id)
        if conn.port != opts.port and port_key(conn.port) != port_key(opts.port):
            raise InvalidArgument(
                messages.PORT_AND_CONNECTION.format(id=conn.id, on=conn.port, port=opts.port[:200]),
                connection_id=conn.id,
            )
        _same_settings(conn, settings)
        return connection_id, False
    if writes:  # refused before anything is opened for it, in the words a call by id hears
        svc.policy.require_writable(name)
    conn, opened = await port_connection(svc, caller, opts.port, settings, protocol=protocol)
    return conn.id, opened


async def adopt(svc: Services, caller: Caller, opts: OpenOptions) -> results.OpenResult | None:
    """``open`` on a port the caller holds: that connection, kept from now on (None: none is held)."""
    check_text(opts.port)
    conn = _on_port(svc, opts.port)
    hold = svc.held.get(conn.id) if conn is not None else None
    if conn is None or hold is None or hold.conn is not conn or conn.owner != caller.key:
        return None
    given = [k for k in names(OpenOptions) if k not in _AS_OPENED and getattr(opts, k) is not None]
    if given:
        raise InvalidArgument(
            messages.HELD_ADOPT_AS_IS.format(id=conn.id, names=", ".join(given)), connection_id=conn.id
        )
    _same_settings(conn, opts.settings())
    release(svc, conn.id)
    return results.open_result(conn, *hold.opened)


def find(svc: Services, connection_id: str | None) -> Hold | None:
    """The hold of the connection a call names (by id or by port name), if it is held."""
    if not svc.held or connection_id is None:
        return None
    hold = svc.held.get(connection_id)
    if hold is None:
        try:
            hold = svc.held.get(svc.manager.get(connection_id).id)
        except SerialMcpError:
            return None
    return hold


@contextmanager
def using(hold: Hold) -> Iterator[None]:
    """A call runs on ``hold``'s connection: its idle clock stops, and starts again when it ends."""
    hold.busy += 1
    hold.restart()
    try:
        yield
    finally:
        hold.busy -= 1
        hold.restart()


def marked(svc: Services, hold: Hold, result: T) -> T:
    """``result`` with the held note, where its model has the field (read, write, transact,
    capture_boot)."""
    if "held" in getattr(type(result), "model_fields", ()):
        result.held = held_note(svc, hold.conn)  # type: ignore[attr-defined]  # it has the field
    return result


async def drop(svc: Services, connection_id: str) -> None:
    """Close a connection opened for a call that then failed: nothing is held that no result named
    (unless another call uses it now: its result names it)."""
    hold = svc.held.get(connection_id)
    if hold is not None and not hold.busy and release(svc, connection_id) is not None:
        try:
            await svc.manager.close(connection_id)
        except SerialMcpError:
            pass


def release(svc: Services, connection_id: str) -> Hold | None:
    """Stop holding a connection (adopted, or closed): its idle task ends."""
    hold = svc.held.pop(connection_id, None)
    if hold is not None:
        hold.scope.cancel()
    return hold


# --- inside ------------------------------------------------------------------------------------------


def _resolved(port: str, svc: Services) -> str | None:
    try:
        return resolve_port(port, svc.port_lister)
    except SerialMcpError:  # not found or ambiguous: the open says so
        return None


def _on_port(svc: Services, port: str) -> Connection | None:
    """The open connection to ``port`` (by name, or the same device through a symlink), whoever's."""
    key = port_key(port)
    for conn in svc.manager.list():
        if conn.port == port or port_key(conn.port) == key:
            return conn
    try:  # the name as given to open (a URL's password is not in conn.port)
        conn = svc.manager.get(port)
    except SerialMcpError:
        return None
    return conn if conn.id != port else None


def _same_settings(conn: Connection, settings: Mapping[str, object]) -> None:
    now = conn.settings.as_dict()
    for name, value in settings.items():
        if value is not None and name in now and now[name] != value:
            raise InvalidArgument(
                messages.HELD_SETTINGS_DIFFER.format(
                    id=conn.id, port=conn.port, name=name, now=now[name], given=value
                ),
                connection_id=conn.id,
                port=conn.port,
            )


class _Forget:
    """The manager's observer: a held connection closed by anyone is held no more."""

    def __init__(self, svc: Services) -> None:
        self.svc = svc

    def __call__(self, what: str, conn: Connection) -> None:
        hold = self.svc.held.get(conn.id)
        if what == "close" and hold is not None and hold.conn is conn:
            release(self.svc, conn.id)


def _hold(svc: Services, conn: Connection, opened: tuple[str | None, str, str | None]) -> Hold:
    if not any(isinstance(o, _Forget) and o.svc is svc for o in svc.manager.observers):
        svc.manager.observers.append(_Forget(svc))
    idle = svc.held_idle_s
    hold = Hold(conn, idle, opened, anyio.CancelScope(deadline=anyio.current_time() + idle))
    svc.held[conn.id] = hold
    hold.task = asyncio.get_running_loop().create_task(_expire(svc, hold), name=f"held-{conn.id}")
    return hold


async def _expire(svc: Services, hold: Hold) -> None:
    """Close ``hold``'s connection at the end of its idle time, unless it is released first."""
    with hold.scope:
        await anyio.sleep_forever()
    if svc.held.get(hold.conn.id) is not hold:  # adopted or closed meanwhile
        return
    release(svc, hold.conn.id)
    log.info("closing held connection %s (%s): idle %g s", hold.conn.id, hold.conn.port, hold.idle_s)
    try:
        await svc.manager.close(hold.conn.id)
    except Exception:  # a failed close must not end in an unretrieved task exception
        log.exception("closing held connection %s", hold.conn.id)
