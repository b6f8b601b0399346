"""ConnectionManager: opens ports through an injected Opener, one connection per port.

Every door opens here, so this is where a port's name is made safe to show (``core.port_url.redact``):
a connection is named, listed, logged and recorded as the redacted name, while the opener (and each
reconnect) gets the name as given; an open's failure is scrubbed of the URL's secrets (``scrub``)."""

from __future__ import annotations

import asyncio
import importlib
import itertools
import logging
import os
from collections.abc import Callable

import anyio

from serial_mcp import messages
from serial_mcp.core.connection_options import ConnectionOptions
from serial_mcp.core.identity import Identity
from serial_mcp.core.port_url import check_text, redact, scrub
from serial_mcp.core.reconnect import ReconnectPolicy
from serial_mcp.core.ring import DEFAULT_CAPACITY, MAX_CAPACITY, MIN_CAPACITY
from serial_mcp.core.settings import SerialSettings, validate_settings
from serial_mcp.errors import (
    ErrorCode,
    InvalidArgument,
    LimitReached,
    NotFound,
    PortError,
    SerialMcpError,
    Short,
)
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.following import Follower, PortLister
from serial_mcp.serial.handle import LeaseHolder, Opener, PortHandle

log = logging.getLogger(__name__)

DEFAULT_MAX_CONNECTIONS = 256  # ``--max-connections``: a lab host's worth of adapters
DEFAULT_MAX_RING_MEMORY = 1 << 30  # all connections' RX rings together (``--max-ring-memory``)
#: file descriptors one open device connection holds: the device, pyserial's two cancel pipes (read and
#: write) and the handle's two wake pipes (reader and writer), two ends each
DESCRIPTORS_PER_PORT = 9
_DESCRIPTORS_SPARE = 64  # kept free for the server itself: stdio, logs, capture files, a mirror, the store


def raise_file_limit() -> tuple[int, int]:
    """Raise this process's soft ``RLIMIT_NOFILE`` to its hard limit (at start: each port holds
    ``DESCRIPTORS_PER_PORT`` descriptors, and a lab host's worth of ports needs more than the usual soft
    1024); returns the (soft, hard) limits now in force."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):  # a hard limit of RLIM_INFINITY on some systems is refused
            log.debug("could not raise the file limit from %d to %d", soft, hard)
    return soft, hard


def free_descriptors() -> int | None:
    """How many more descriptors this process may open (None where /proc/self/fd cannot be listed)."""
    try:
        used = len(os.listdir("/proc/self/fd"))
    except OSError:
        return None
    return file_limit() - used


def file_limit() -> int:
    """The soft ``RLIMIT_NOFILE`` in force (what this process may hold open)."""
    import resource

    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def port_key(port: str) -> str:
    """Identity of a port for the one-connection rule: symlinks (``/dev/serial/by-id/...``) resolved."""
    if "://" in port:
        return port
    try:
        return os.path.realpath(port)
    except OSError:
        return port


def open_scrubbed(opener: Opener, port: str, settings: SerialSettings) -> PortHandle:
    """``opener.open``, with no secret of ``port`` in its failure or in the handle's name (which the
    pump's log lines use). Runs on a worker thread, so it also loads, once, what start-up left for
    the first open: the event watch's detector (``serial_mcp.core.events``)."""
    importlib.import_module("serial_mcp.core.events")
    try:
        handle = opener.open(port, settings)
    except SerialMcpError as exc:
        raise _scrubbed(exc, port) from None
    except OSError as exc:
        raise _scrubbed(exc, port) from None
    shown = redact(handle.name)
    if shown != handle.name:
        handle.name = shown
    return handle


def _scrubbed(exc: Exception, port: str) -> Exception:
    if redact(port) == port:
        return exc
    if isinstance(exc, SerialMcpError):
        exc.message = scrub(exc.message, port)
        exc.args = (exc.message,)
    elif isinstance(exc, OSError) and exc.errno is not None and exc.strerror is not None:
        exc = type(exc)(exc.errno, scrub(exc.strerror, port))
    else:
        exc = type(exc)(scrub(str(exc), port))
    exc.__cause__ = exc.__context__ = None  # the cause's text (pyserial's) quotes the URL too
    return exc


class ConnectionManager:
    """Every open connection of this server; the opener decides where bytes come from."""

    def __init__(
        self,
        opener: Opener,
        max_ring_memory: int = DEFAULT_MAX_RING_MEMORY,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        self.opener = opener
        self.max_ring_memory = max_ring_memory
        self.max_connections = max_connections
        self._connections: dict[str, Connection] = {}
        self._given: dict[str, str] = {}  # connection id -> the port name as given (conn.port is redacted)
        self._ids = itertools.count(1)
        self._open_lock = asyncio.Lock()
        # port key -> (ring size, set when done), of opens under way (counted as open)
        self._opening: dict[str, tuple[int, asyncio.Event]] = {}
        # Called on the loop with ("open" | "close", connection): the MCP layer's notifications hang here.
        self.observers: list[Callable[[str, Connection], None]] = []

    async def open(
        self,
        port: str,
        settings: SerialSettings | None = None,
        rx_buffer_size: int | None = None,
        options: ConnectionOptions | None = None,
        reconnect: ReconnectPolicy | None = None,
        follow: tuple[Identity, PortLister] | None = None,
    ) -> Connection:
        """Open ``port``; refuses a port this server already has open (``port_busy``). ``follow``:
        the device's identity and the port enumerator; each reopen finds the device by identity."""
        if not port or not port.strip():
            raise InvalidArgument(messages.OPEN_NO_PORT)
        check_text(port)  # a NUL byte (realpath would crash on it) or a lone surrogate
        settings = validate_settings(settings or SerialSettings())
        size = DEFAULT_CAPACITY if rx_buffer_size is None else rx_buffer_size
        if isinstance(size, bool) or not MIN_CAPACITY <= size <= MAX_CAPACITY:
            raise InvalidArgument(
                messages.BAD_RX_BUFFER.format(value=Short(size), min=MIN_CAPACITY, max=MAX_CAPACITY)
            )
        key = port_key(port)
        async with self._open_lock:  # the checks and the reservation, not the OS open: ports open in parallel
            for conn in self._connections.values():
                if key in (port_key(self._given.get(conn.id, conn.port)), port_key(conn.port)):
                    shown = Short(redact(port))
                    busy = messages.PORT_BUSY_HERE.format(port=shown, id=conn.id, state=conn.state)
                    raise PortError(ErrorCode.PORT_BUSY, busy)
            if key in self._opening:
                raise PortError(
                    ErrorCode.PORT_BUSY, messages.PORT_OPENING_HERE.format(port=Short(redact(port)))
                )
            self._check_connection_count()
            self._check_ring_memory(size)
            self._opening[key] = (size, asyncio.Event())
        try:
            handle = await anyio.to_thread.run_sync(open_scrubbed, self.opener, port, settings)
        finally:
            self._opening.pop(key)[1].set()  # its waiters run after the registration below
        # registered with no await before it: nothing can take the port meanwhile
        conn_id = f"c{next(self._ids)}"
        opener = self.opener
        reopen: Callable[[SerialSettings], PortHandle] = lambda s: open_scrubbed(opener, port, s)  # noqa: E731
        if follow is not None:
            reopen = Follower(follow[0], port, follow[1], lambda p, s: open_scrubbed(opener, p, s))
        try:
            conn = Connection(
                conn_id,
                redact(port),
                handle,
                settings,
                size,
                asyncio.get_running_loop(),
                options,
                reopen=reopen,
                reconnect_policy=reconnect,
            )
        except MemoryError:  # the ring could not be allocated: say so, and let the port go
            await anyio.to_thread.run_sync(handle.close)
            raise LimitReached(
                ErrorCode.RESOURCE_LIMIT, messages.RING_ALLOC_FAILED.format(size=size)
            ) from None
        if isinstance(handle, LeaseHolder):  # a labgrid place: released when this connection closes
            conn.closers.append(handle.hold_lease())
        self._connections[conn_id] = conn
        self._given[conn_id] = port
        conn.start()
        self._notify("open", conn)
        log.info("opened %s as %s (%s)", conn.port, conn_id, settings)
        return conn

    async def opened(self, port: str) -> None:
        """Return once an open of ``port`` under way (if any) has finished, registered or failed."""
        entry = self._opening.get(port_key(port))
        if entry is not None:
            await entry[1].wait()

    def get(self, connection_id: str) -> Connection:
        """By id (``c1``), or by port name when exactly one connection has that port."""
        conn = self._connections.get(connection_id)
        if conn is not None:
            return conn
        by_port = [c for c in self._connections.values() if connection_id in (c.port, self._given.get(c.id))]
        if len(by_port) == 1:
            return by_port[0]
        known = ", ".join(f"{c.id} ({c.port})" for c in self._connections.values()) or "none"
        shown = redact(connection_id) if isinstance(connection_id, str) else connection_id
        raise NotFound(
            ErrorCode.CONNECTION_NOT_FOUND,
            messages.CONNECTION_NOT_FOUND.format(id=Short(shown), known=known),
        )

    def ring_memory(self) -> int:
        """Bytes held by the RX rings of every connection this manager has."""
        return sum(c.ring.capacity for c in self._connections.values())

    def _check_connection_count(self) -> None:
        """Refuse an open past ``max_connections``, or one the file limit leaves no descriptors for (a
        device port holds ``DESCRIPTORS_PER_PORT``; ``_DESCRIPTORS_SPARE`` stay free for the server)."""
        n = len(self._connections) + len(self._opening)
        limit, free = file_limit(), free_descriptors()
        short = free is not None and free < DESCRIPTORS_PER_PORT + _DESCRIPTORS_SPARE
        if n >= self.max_connections or short:
            raise LimitReached(
                ErrorCode.TOO_MANY_CONNECTIONS,
                messages.TOO_MANY_CONNECTIONS.format(
                    n=n, max=self.max_connections, files=limit, free="?" if free is None else free
                ),
            )

    def _check_ring_memory(self, size: int) -> None:
        used = self.ring_memory() + sum(size for size, _ in self._opening.values())
        if used + size > self.max_ring_memory:
            raise LimitReached(
                ErrorCode.RESOURCE_LIMIT,
                messages.RING_MEMORY_LIMIT.format(
                    size=size, used=used, limit=self.max_ring_memory, free=max(0, self.max_ring_memory - used)
                ),
            )

    def list(self) -> list[Connection]:
        return list(self._connections.values())

    async def close(self, connection_id: str) -> Connection:
        conn = self.get(connection_id)
        await conn.close()
        self._connections.pop(conn.id, None)
        self._given.pop(conn.id, None)
        self._notify("close", conn)
        log.info("closed %s (%s)", conn.id, conn.port)
        return conn

    def _notify(self, what: str, conn: Connection) -> None:
        for observer in list(self.observers):
            try:
                observer(what, conn)
            except Exception:  # an observer must never break open/close
                log.exception("connection observer failed")

    async def close_all(self) -> None:
        for conn in list(self._connections.values()):
            await self.close(conn.id)
