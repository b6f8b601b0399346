"""RxView: a connection's RX side — its ring, its cursors and the lock the pump appends under.

A part of ``serial.connection.Connection`` (``conn.rx``): the pump thread appends to ``ring`` under
``lock``; readers move cursors through the named operations here (``cursor_offset``, ``flush_cursor``,
``unread_before``, ``cursor_screen``, ``forget``, ``reading``), never the table itself from engine/.
"""

from __future__ import annotations

import asyncio
import threading
from typing import NamedTuple

from serial_mcp import messages
from serial_mcp.core.cursors import Cursor, CursorTable
from serial_mcp.core.ring import RingRead, RxRing
from serial_mcp.core.screen import TerminalScreen
from serial_mcp.errors import ErrorCode, OperationTimeout
from serial_mcp.serial.tx import acquire_within

__all__ = ["RxStatus", "RxView"]


class RxStatus(NamedTuple):
    """The RX side at one instant (``RxView.status``)."""

    start_offset: int  # the oldest byte the ring still holds
    end_offset: int  # one past the newest
    bytes_evicted: int  # dropped by the ring over the connection's life
    cursors: tuple[tuple[str, int], ...]  # (name, offset) of every cursor


class RxView:
    """The ring, the cursor table, their lock, and one read lock per cursor."""

    __slots__ = ("_cursor_locks", "cursors", "lock", "name", "ring")

    def __init__(self, capacity: int, name: str) -> None:
        self.name = name  # the connection's id, for errors
        self.lock = threading.Lock()  # also over the connection's log, listeners and responders
        self.ring = RxRing(capacity)
        self.cursors = CursorTable(0)
        self._cursor_locks: dict[str, asyncio.Lock] = {}

    def cursor(self, name: str) -> Cursor:
        """Cursor ``name`` (a new one starts at the oldest retained byte); hold ``lock``."""
        return self.cursors.get(name, self.ring.start_offset)

    def end(self) -> int:
        """The live edge: one past the newest byte received."""
        with self.lock:
            return self.ring.end_offset

    def read(self, offset: int, max_bytes: int | None) -> RingRead:
        with self.lock:
            return self.ring.read(offset, max_bytes)

    def time_at(self, offset: int) -> float | None:
        with self.lock:
            return self.ring.time_at(offset)

    def status(self) -> RxStatus:
        """The ring's edges, its evictions and every cursor's position, in one consistent view."""
        with self.lock:
            ring = self.ring
            positions = tuple((c.name, c.offset) for c in self.cursors)
            return RxStatus(ring.start_offset, ring.end_offset, ring.dropped_total, positions)

    def cursor_offset(self, name: str) -> int:
        """Where cursor ``name`` stands."""
        with self.lock:
            return self.cursor(name).offset

    def flush_cursor(self, name: str, end: int) -> int:
        """Move cursor ``name`` to ``end`` (a mark from ``purge_and_mark``), forgetting its framed-read
        state; returns how many bytes it skipped unread."""
        with self.lock:
            cur = self.cursor(name)
            skipped = max(0, end - cur.offset)
            cur.offset = end
            cur.drop_decoder()
        return skipped

    def unread_before(self, name: str, mark: int) -> int:
        """Retained bytes before ``mark`` that cursor ``name`` has not read."""
        with self.lock:
            return max(0, mark - max(self.cursor(name).offset, self.ring.start_offset))

    def cursor_screen(self, name: str, cols: int, rows: int) -> TerminalScreen:
        """The terminal screen kept with cursor ``name`` (a new size starts a new screen)."""
        with self.lock:
            cur = self.cursor(name)
            if cur.screen is None or cur.screen.size != (cols, rows):
                cur.screen = TerminalScreen(cols, rows)
            screen: TerminalScreen = cur.screen
        return screen

    def forget(self, name: str) -> None:
        """Drop cursor ``name`` and its read lock (the caller it belonged to is gone)."""
        with self.lock:
            self.cursors.remove(name)
        lock = self._cursor_locks.get(name)
        if lock is not None and not lock.locked():
            del self._cursor_locks[name]

    def forget_read_locks(self) -> None:
        self._cursor_locks.clear()

    def reading(self, cursor: str, timeout: float) -> CursorHold:
        """Hold ``cursor`` for one read: reads on one cursor run one at a time, so two concurrent
        readers never get the same bytes twice (nor lose any). Waiting longer than ``timeout`` is
        ``cursor_busy``."""
        return CursorHold(self._cursor_locks.setdefault(cursor, asyncio.Lock()), self.name, cursor, timeout)


class CursorHold:
    """``async with conn.rx.reading(cursor, timeout)``: the cursor's lock, taken within ``timeout``
    (a class, not a generator: it runs once per read)."""

    __slots__ = ("_cursor", "_id", "_lock", "_timeout")

    def __init__(self, lock: asyncio.Lock, conn_id: str, cursor: str, timeout: float) -> None:
        self._lock, self._id, self._cursor, self._timeout = lock, conn_id, cursor, timeout

    async def __aenter__(self) -> None:
        if not await acquire_within(self._lock, max(self._timeout, 0.05)):
            ms = int(self._timeout * 1000)
            message = messages.CURSOR_BUSY.format(cursor=self._cursor, id=self._id, ms=ms)
            raise OperationTimeout(ErrorCode.CURSOR_BUSY, message)

    async def __aexit__(self, *exc: object) -> None:
        self._lock.release()
