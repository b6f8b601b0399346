"""TxSession: serialized, FIFO writes for one connection, run off the event loop."""

from __future__ import annotations

import asyncio

import anyio

from serial_mcp.serial.handle import PortHandle


class TxSession:
    """One writer at a time, in arrival order; the blocking write happens in a worker thread."""

    def __init__(self, handle: PortHandle) -> None:
        self.handle = handle
        self._lock = asyncio.Lock()  # asyncio.Lock wakes waiters in FIFO order
        self.tx_bytes = 0

    @property
    def lock(self) -> asyncio.Lock:
        """Held across a write; ``transact`` holds it across mark + write so replies can't interleave."""
        return self._lock

    async def write_locked(self, data: bytes) -> int:
        """Write ``data``; the caller must hold ``lock``."""
        n = await anyio.to_thread.run_sync(self.handle.write, data)
        self.tx_bytes += n
        return n

    async def write(self, data: bytes) -> int:
        async with self._lock:
            return await self.write_locked(data)
