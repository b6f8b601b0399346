"""TxSession: serialized, FIFO writes for one connection, run off the event loop, optionally paced."""

from __future__ import annotations

import asyncio
import threading
import time

import anyio

from serial_mcp.core.pace import Pace, pace_chunks
from serial_mcp.serial.handle import PortHandle


class TxSession:
    """One writer at a time, in arrival order; the blocking write happens in a worker thread."""

    def __init__(self, handle: PortHandle) -> None:
        self.handle = handle
        self._lock = asyncio.Lock()  # asyncio.Lock wakes waiters in FIFO order
        # Engine-side writers (respond-on-match from the pump thread, a PTY mirror) bypass the asyncio
        # lock on purpose — they must answer *during* a transact's read — but never interleave bytes
        # with another write: every handle.write goes through this lock.
        self._io_lock = threading.Lock()
        self.tx_bytes = 0

    def write_now(self, data: bytes) -> int:
        """Blocking write from any thread, atomic with respect to other writes (not FIFO-queued)."""
        with self._io_lock:
            n = self.handle.write(data)
            self.tx_bytes += n
            return n

    def _write_io(self, data: bytes) -> int:
        with self._io_lock:
            return self.handle.write(data)

    @property
    def lock(self) -> asyncio.Lock:
        """Held across a write; ``transact`` holds it across mark + write so replies can't interleave."""
        return self._lock

    async def write_locked(self, data: bytes, pace: Pace | None = None) -> int:
        """Write ``data``; the caller must hold ``lock``. A paced write stops early if cancelled."""
        if pace is None:
            n = await anyio.to_thread.run_sync(self._write_io, data)
            self.tx_bytes += n
            return n
        stop = threading.Event()
        done = threading.Event()
        written = [0]

        def paced() -> None:
            try:
                for piece, pause in pace_chunks(data, pace):
                    if stop.is_set():
                        return
                    written[0] += self._write_io(piece)
                    if pause:
                        time.sleep(pause)
            finally:
                done.set()

        try:
            await anyio.to_thread.run_sync(paced, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            stop.set()
            with anyio.CancelScope(shield=True):  # never leave a writer running behind the lock
                await anyio.to_thread.run_sync(done.wait)
            raise
        finally:
            self.tx_bytes += written[0]
        return written[0]

    async def write(self, data: bytes, pace: Pace | None = None) -> int:
        async with self._lock:
            return await self.write_locked(data, pace)
