"""Connection: one open port — its pump thread, RX ring, cursors, TX session and state.

Thread rules: the pump thread only calls ``_on_data`` / ``_on_pump_stop`` (which touch the ring
under ``lock`` and schedule a wake-up on the event loop). Everything else runs on the loop.
Waiters are woken with ``loop.call_soon_threadsafe``; bursts are coalesced into one wake-up.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Literal

import anyio

from serial_mcp.core.cursors import CursorTable
from serial_mcp.core.ring import RingRead, RxRing
from serial_mcp.core.settings import SerialSettings
from serial_mcp.serial.handle import PortHandle
from serial_mcp.serial.pump import RxPump
from serial_mcp.serial.tx import TxSession

log = logging.getLogger(__name__)

State = Literal["open", "disconnected", "closed"]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A consistent view of the ring edges and state, taken under the lock."""

    start_offset: int
    end_offset: int
    state: State
    last_rx_time: float | None


class Connection:
    """An open port and everything that consumes it."""

    def __init__(
        self,
        connection_id: str,
        port: str,
        handle: PortHandle,
        settings: SerialSettings,
        rx_buffer_size: int,
        loop: asyncio.AbstractEventLoop,
        options: dict[str, Any] | None = None,
    ) -> None:
        self.id = connection_id
        self.port = port
        self.handle = handle
        self.settings = settings
        self.options: dict[str, Any] = options or {}  # connection defaults: protocol, framing, parser
        self.loop = loop
        self.lock = threading.Lock()
        self.ring = RxRing(rx_buffer_size)
        self.cursors = CursorTable(0)
        self.tx = TxSession(handle)
        self.state: State = "open"
        self.last_error: str | None = None
        self.bytes_lost_total = 0  # bytes that reads were told they lost (ring overrun before they read)
        self.opened_at = time.time()
        self._last_rx_time: float | None = None
        self._waiters: list[asyncio.Future[None]] = []
        self._wake_pending = False
        self._pump = RxPump(handle, self._on_data, self._on_pump_stop, name=f"rx-pump-{connection_id}")

    def start(self) -> None:
        self._pump.start()

    # --- pump thread side ---------------------------------------------------------------------

    def _on_data(self, data: bytes, t: float) -> None:
        with self.lock:
            self.ring.append(data, t)
            self._last_rx_time = t
            # Wake the loop only if someone waits and no wake-up is already on its way: a flood
            # nobody is reading costs no loop work at all, and a burst costs one wake-up.
            schedule = bool(self._waiters) and not self._wake_pending
            if schedule:
                self._wake_pending = True
        if schedule:
            self._call_on_loop(self._wake)

    def _on_pump_stop(self, error: BaseException | None) -> None:
        if error is not None:
            self._call_on_loop(self._mark_disconnected, error)

    def _call_on_loop(self, fn: Any, *args: Any) -> None:
        try:
            self.loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # loop closed during shutdown: nobody is waiting any more
            pass

    # --- event loop side ----------------------------------------------------------------------

    def _wake(self) -> None:
        with self.lock:
            self._wake_pending = False
            waiters, self._waiters = self._waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    def _mark_disconnected(self, error: BaseException) -> None:
        if self.state != "open":
            return
        self.state = "disconnected"
        self.last_error = f"{type(error).__name__}: {error}"
        log.warning("connection %s (%s) disconnected: %s", self.id, self.port, self.last_error)
        try:
            self.handle.close()
        except Exception:
            pass
        self._wake()

    def note_write_error(self, error: BaseException) -> None:
        """A write failed at the OS level: the port is gone, same as a read error."""
        self._mark_disconnected(error)

    def snapshot(self) -> Snapshot:
        with self.lock:
            return Snapshot(self.ring.start_offset, self.ring.end_offset, self.state, self._last_rx_time)

    def read_ring(self, offset: int, max_bytes: int | None) -> RingRead:
        with self.lock:
            return self.ring.read(offset, max_bytes)

    def time_at(self, offset: int) -> float | None:
        with self.lock:
            return self.ring.time_at(offset)

    async def wait_change(self, timeout: float, seen_end: int | None = None) -> None:
        """Sleep until bytes beyond ``seen_end`` arrive, the state changes, or ``timeout`` passes.

        The check and the registration happen under the pump's lock, so a chunk that lands
        between the caller's look at the ring and this call is never slept through.
        """
        if timeout <= 0:
            return
        fut: asyncio.Future[None] = self.loop.create_future()
        with self.lock:
            if seen_end is not None and self.ring.end_offset != seen_end:
                return
            self._waiters.append(fut)
        try:
            with anyio.move_on_after(timeout):
                await fut
        finally:
            if not fut.done():
                fut.cancel()
                with self.lock:
                    if fut in self._waiters:
                        self._waiters.remove(fut)

    async def close(self) -> None:
        """Stop the pump, close the port, wake every waiter. Idempotent."""
        if self.state == "closed":
            return
        was_open = self.state == "open"
        self.state = "closed"
        if was_open:
            await anyio.to_thread.run_sync(self._pump.stop)
            try:
                await anyio.to_thread.run_sync(self.handle.close)
            except Exception as exc:
                log.info("closing %s: %s", self.port, exc)
        self._wake()

    @property
    def pump_alive(self) -> bool:
        return self._pump.alive
