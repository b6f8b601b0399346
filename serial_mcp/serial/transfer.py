"""Drive a sans-IO XMODEM/YMODEM machine over a connection: its output goes to the port, the port's
RX (from a private mark in the ring, so no cursor moves) goes back in, and its timeouts are waited
for on the ring's data signal — the machine itself never sees a clock or a port.

The TX lock is held for the whole transfer, so no other write can corrupt it; cancellation sends
the protocol's abort sequence (shielded) before it ends.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import anyio

from serial_mcp.core.xmodem import Done, Progress, TransferResult
from serial_mcp.serial.connection import Connection


class Machine(Protocol):
    @property
    def timeout(self) -> float: ...

    @property
    def done(self) -> bool: ...

    @property
    def result(self) -> TransferResult | None: ...

    def receive_bytes(self, data: bytes) -> list[Any]: ...

    def on_timeout(self) -> list[Any]: ...

    def cancel(self) -> list[Any]: ...

    def peer_gone(self) -> list[Any]: ...

    def next_output(self) -> bytes: ...


async def run_transfer(
    conn: Connection, machine: Machine, on_progress: Callable[[Progress], Awaitable[None]] | None = None
) -> TransferResult:
    async with conn.tx.turn():
        pos = conn.snapshot().end_offset
        try:
            while not machine.done:
                out = machine.next_output()
                if out:
                    await anyio.to_thread.run_sync(conn.tx.write_now, out)
                    continue
                deadline = time.monotonic() + machine.timeout
                events: list[Any] = []
                while True:
                    rr = conn.read_ring(pos, 65536)
                    if rr.data:
                        pos = rr.next_offset
                        events = machine.receive_bytes(rr.data)
                        break
                    if conn.state in ("disconnected", "reconnecting"):  # the port is gone
                        events = machine.peer_gone()
                        break
                    if conn.state == "closed":
                        events = machine.cancel()
                        break
                    left = deadline - time.monotonic()
                    if left <= 0:
                        events = machine.on_timeout()
                        break
                    await conn.wait_change(left, rr.next_offset)
                for event in events:
                    if isinstance(event, Progress) and on_progress is not None:
                        await on_progress(event)
                    if isinstance(event, Done):
                        break
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):  # tell the peer we gave up, then stop
                machine.cancel()
                abort = machine.next_output()
                if abort and conn.state == "open":
                    await anyio.to_thread.run_sync(conn.tx.write_now, abort)
            raise
        if machine.result is None:
            machine.cancel()
        assert machine.result is not None
        return machine.result
