"""Lending a connection's device node to another program, and taking it back.

``Lend.start`` closes the OS handle (the connection stays: ring, cursors, offsets, recording and
responders; state ``released``). The port comes back on ``reclaim``, at the deadline, or as soon as
the program that took the node has let it go (``core.lend_watch``), from its first byte after the
reopen: offsets continue, and nothing the borrower read is replayed (we held no handle meanwhile).

Who holds the node is looked up in a worker thread every ``SCAN_INTERVAL_S`` (a scan of ``/proc``
takes milliseconds); where the node cannot be watched (URL ports, no ``/proc``) the task just sleeps
until the deadline. The task is the connection's: closing the connection cancels it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal

import anyio

from serial_mcp import messages
from serial_mcp.core.lend_watch import SCAN_INTERVAL_S, LendWatch
from serial_mcp.errors import ErrorCode, PortError, SerialMcpError
from serial_mcp.serial import holders
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.event_text import lend_cause

log = logging.getLogger(__name__)

ReclaimReason = Literal["reclaim", "timeout", "holder_left", "reconnect"]
HolderScan = Callable[[str], frozenset[int]]


class Lend:
    """One lend of ``conn``'s node, for at most ``timeout_s``."""

    def __init__(
        self,
        conn: Connection,
        timeout_s: float,
        *,
        scan: HolderScan | None = None,
        interval_s: float = SCAN_INTERVAL_S,
        events: bool = True,
    ) -> None:
        self.conn = conn
        self.timeout_s = timeout_s
        self.path = conn.port
        node = "://" not in self.path and os.path.exists(self.path)  # URL ports have no node to watch
        watchable = scan is not None or (node and holders.can_watch())
        self._scan: HolderScan | None = (scan or holders.holders_of) if watchable else None
        self.interval_s = interval_s
        self._use_events = events
        self.watch: LendWatch | None = None
        self.released_at = 0.0  # time.time() of the release
        self._deadline = 0.0  # monotonic
        self._task: asyncio.Task[None] | None = None
        self._events: holders.NodeEvents | None = None

    @property
    def watching(self) -> bool:
        return self._scan is not None

    async def start(self) -> None:
        """Release the port and start watching for its return."""
        conn = self.conn
        if self._scan is not None:  # watch before letting go: no open is missed
            if self._use_events:
                self._events = holders.NodeEvents.watch(self.path)
            baseline = await anyio.to_thread.run_sync(self._scan, self.path)
            self.watch = LendWatch(baseline)
        try:
            await conn.detach(
                "released",
                "release",
                timeout_ms=int(self.timeout_s * 1000),
                watching="events" if self._events is not None else "scans" if self.watching else None,
                held_by=sorted(self.watch.baseline) if self.watch else None,
            )
        except BaseException:  # not lent after all: the watch goes
            self._stop_events()
            raise
        conn.lend = self
        self.released_at = time.time()
        self._deadline = time.monotonic() + self.timeout_s
        self._task = conn.loop.create_task(self._run(), name=f"lend-{conn.id}")

    def reclaim_in_ms(self) -> int:
        return int(max(0.0, self._deadline - time.monotonic()) * 1000)

    def status(self) -> dict[str, Any]:
        """What ``get_status`` and ``lend`` show while the port is lent."""
        watch = self.watch
        return {
            "watching": self.watching,
            "borrowers_seen": sorted(watch.borrowers_seen) if watch else [],
            "opens_seen": watch.opens if watch else None,
            "reclaim_in_ms": self.reclaim_in_ms(),
        }

    async def _run(self) -> None:
        try:
            reason = await self._wait()
        except asyncio.CancelledError:
            self._stop_events()
            raise
        except Exception:  # the watch failed: fall back to the deadline rather than hold the port forever
            log.exception("connection %s: watching the lent port failed", self.conn.id)
            await anyio.sleep(max(0.0, self._deadline - time.monotonic()))
            reason = "timeout"
        self._task = None  # from here on a reclaim call must not cancel the reopen (its handle would leak)
        self._stop_events()
        await self._take_back(reason)

    def _stop_events(self) -> None:
        events, self._events = self._events, None
        if events is not None:
            self.conn.loop.remove_reader(events.fd)  # before closing it: the number may be reused
            events.close()

    async def _wait(self) -> ReclaimReason:
        if self._scan is None or self.watch is None:
            await anyio.sleep(max(0.0, self._deadline - time.monotonic()))
            return "timeout"
        if self._events is not None:
            return await self._wait_events(self._events, self._scan, self.watch)
        return await self._wait_polled(self._scan, self.watch)

    async def _wait_events(
        self, events: holders.NodeEvents, scan: HolderScan, watch: LendWatch
    ) -> ReclaimReason:
        """Woken by the node's open and close events; the holders are scanned after a close and
        when a grace ends, never on a timer of our own otherwise."""
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()
        seen: list[str] = []

        def readable() -> None:
            seen.extend(events.read())
            wake.set()

        loop.add_reader(events.fd, readable)
        try:
            while True:
                now = time.monotonic()
                if now >= self._deadline:
                    return "timeout"
                until = min(self._deadline, watch.free_at() or self._deadline)
                with anyio.move_on_after(max(0.0, until - now)):
                    await wake.wait()
                wake.clear()
                happened, seen[:] = list(seen), []
                for what in happened:
                    if what == "open":
                        watch.opened()
                    elif what == "close":
                        watch.closed()
                    else:
                        watch.lost_count()
                due = watch.free_at()
                if happened or (due is not None and time.monotonic() >= due):  # who, and is it free
                    held = await anyio.to_thread.run_sync(scan, self.path)
                    if watch.observe(held, time.monotonic()) == "free":
                        return "holder_left"
        finally:
            loop.remove_reader(events.fd)

    async def _wait_polled(self, scan: HolderScan, watch: LendWatch) -> ReclaimReason:
        """No open/close events here: the holders are scanned every ``interval_s`` (a borrower
        that holds the node for less than that may be missed: then the timeout ends the lend)."""
        while True:
            left = self._deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            await anyio.sleep(min(self.interval_s, left))
            held = await anyio.to_thread.run_sync(scan, self.path)
            if watch.observe(held, time.monotonic()) == "free":
                return "holder_left"

    async def reclaim(self, reason: ReclaimReason = "reclaim") -> None:
        """Take the port back now (the ``reclaim`` call)."""
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._stop_events()
        await self._take_back(reason)

    async def _take_back(self, reason: ReclaimReason) -> None:
        conn = self.conn
        if conn.lend is not self:
            return
        conn.lend = None
        if conn.state != "released":
            return
        watch = self.watch
        seen = sorted(watch.borrowers_seen) if watch else None
        log.info("connection %s: taking the port back (%s)", conn.id, reason)
        conn.events.expect_reset(lend_cause(seen))  # a boot seen now is the lend's, not the firmware's own
        await conn.resume("reclaim", reason=reason, borrowers=seen, opens=watch.opens if watch else None)

    def cancel(self) -> None:
        """The connection closes (or reconnects by hand): stop watching, reopen nothing."""
        if self.conn.lend is self:
            self.conn.lend = None
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        self._stop_events()


def released_error(conn: Connection) -> SerialMcpError:
    """``port_released``: what a read or a write on a lent port gets, and what to do."""
    lent: Lend | None = conn.lend
    since, left = "", 0
    if lent is not None:
        when = datetime.fromtimestamp(lent.released_at, UTC).strftime("%H:%M:%S UTC")
        since, left = messages.PORT_RELEASED_SINCE.format(when=when), lent.reclaim_in_ms()
    return PortError(
        ErrorCode.PORT_RELEASED,
        messages.PORT_RELEASED.format(id=conn.id, port=conn.port, since=since, left_ms=left),
        connection_id=conn.id,
        port=conn.port,
    )
