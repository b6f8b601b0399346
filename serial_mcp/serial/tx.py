"""TxSession: serialized, FIFO writes for one connection, run off the event loop, optionally paced.

Every write is bounded: a device that stopped reading (a full PTY, XOFF, CTS low) makes the write
stop at its deadline and report how many bytes went out (``WriteOutcome``), instead of hanging the
call, every later write queued behind it and the shutdown. Closing the port wakes a stuck write.

A write also ends when the device took no byte for its stall time (``stall_s``, default
``DEFAULT_STALL_MS``): 1 MB to a device that stopped reading would otherwise wait out its whole
budget (10 s plus the wire time: ~100 s at 115200). Handles with a bounded write (``write_within``)
watch for it; on a real UART the stall time is at least the wire time of the kernel's output buffer.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

import anyio

from serial_mcp.core.pace import Pace, pace_chunks
from serial_mcp.serial.handle import BoundedWrite, NonBlockingWrite, PortHandle

DEFAULT_WRITE_TIMEOUT_MS = 10_000  # plus the bytes' time on the wire, when no timeout is given
MAX_WRITE_TIMEOUT_MS = 3_600_000
DEFAULT_STALL_MS = 3_000  # a write ends when the device took no byte for this long
ABANDON_GRACE_S = 2.0  # past its deadline a write is given up on, even if its thread still runs
BITS_PER_CHAR = 11  # start + 8 data + parity + stop: a safe upper bound for the wire time


class WriteStopped(TimeoutError):
    """A bounded write ended before all its bytes went out: ``written`` of them did. ``reason``:
    ``timeout`` (the deadline), ``stalled`` (no byte taken for the stall time), ``cancelled``,
    ``closed``."""

    def __init__(self, written: int, reason: str = "timeout") -> None:
        super().__init__(f"write stopped ({reason}) after {written} bytes")
        self.written = written
        self.reason = reason


class WriteOutcome(NamedTuple):
    """What a write did: how many bytes went out, and whether it stopped before the end (at its
    deadline, or — ``stalled`` too — because the device took no byte for the stall time)."""

    bytes_written: int
    timed_out: bool = False
    closed: bool = False  # the port closed under it
    stalled: bool = False  # stopped early (timed_out) because no byte was taken for the stall time


def write_budget_s(
    nbytes: int, baud_rate: int, pace: Pace | None = None, timeout_ms: int | None = None
) -> float:
    """The deadline of a write, in seconds: ``timeout_ms`` if given, else the default plus the time the
    bytes take on the wire at ``baud_rate`` plus the pauses of ``pace``."""
    if timeout_ms is not None:
        return timeout_ms / 1000
    wire = nbytes * BITS_PER_CHAR / max(1, baud_rate)
    pauses = 0.0
    if pace is not None:
        pauses = sum(pause for _, pause in pace_chunks(b"\0" * min(nbytes, 1 << 20), pace))
    return DEFAULT_WRITE_TIMEOUT_MS / 1000 + wire + pauses


def lock_is_free(lock: asyncio.Lock) -> bool:
    """``acquire`` would return at once: unlocked and nobody queued (a just-released lock whose next
    waiter has not run yet is not free: acquiring it means queueing, and queueing needs a deadline)."""
    return not lock.locked() and not getattr(lock, "_waiters", None)


async def acquire_within(lock: asyncio.Lock, timeout_s: float) -> bool:
    """Take ``lock`` (FIFO) within ``timeout_s``; True if taken (the caller releases it). A free lock
    is taken directly: no deadline to keep, and a cancel scope costs on every call."""
    if lock_is_free(lock):
        await lock.acquire()
        return True
    try:
        with anyio.fail_after(timeout_s):
            await lock.acquire()
    except TimeoutError:
        return False
    return True


class TxBusy(TimeoutError):
    """The TX turn was not free within its deadline (a write queued behind a stuck one)."""


class TxTurn:
    """``async with tx.turn(timeout_s)``: the one way to hold a connection's TX turn (FIFO). Held
    across a write, or across mark + write + read so no other write slips into a transact's
    exchange. ``timeout_s`` None waits as long as it takes; else a turn not free in time raises
    ``busy()`` if given, else ``TxBusy``. (A class, not a generator: it runs once per write.)"""

    __slots__ = ("_busy", "_lock", "_timeout")

    def __init__(
        self, lock: asyncio.Lock, timeout_s: float | None, busy: Callable[[], BaseException] | None
    ) -> None:
        self._lock, self._timeout, self._busy = lock, timeout_s, busy

    async def __aenter__(self) -> None:
        if self._timeout is None:
            await self._lock.acquire()
        elif not await acquire_within(self._lock, max(self._timeout, 0.001)):
            raise self._busy() if self._busy is not None else TxBusy(f"TX busy for {self._timeout:.3f} s")

    async def __aexit__(self, *exc: object) -> None:
        self._lock.release()


class TxSession:
    """One writer at a time, in arrival order; the blocking write happens in a worker thread."""

    def __init__(self, handle: PortHandle) -> None:
        self._handle = handle
        self._nowait: NonBlockingWrite | None = handle if isinstance(handle, NonBlockingWrite) else None
        self._lock = asyncio.Lock()  # asyncio.Lock wakes waiters in FIFO order
        # Engine-side writers (respond-on-match from the pump thread, a PTY mirror) bypass the asyncio
        # lock on purpose — they must answer *during* a transact's read — but never interleave bytes
        # with another write: every handle.write goes through this lock.
        self._io_lock = threading.Lock()
        self.tx_bytes = 0

    @property
    def handle(self) -> PortHandle:
        return self._handle

    @handle.setter
    def handle(self, handle: PortHandle) -> None:
        """A reconnect's new handle. Whether it writes without blocking is asked once here: an
        ``isinstance`` on a runtime Protocol walks its members (~10-15 µs), too much for every write."""
        self._handle = handle
        self._nowait = handle if isinstance(handle, NonBlockingWrite) else None

    def write_now(self, data: bytes, timeout_s: float | None = None, stall_s: float | None = None) -> int:
        """Blocking write from any thread, atomic with respect to other writes (not FIFO-queued);
        bounded like every write (raises ``WriteStopped``, a ``TimeoutError``, at the deadline or
        the stall time)."""
        budget = DEFAULT_WRITE_TIMEOUT_MS / 1000 if timeout_s is None else timeout_s
        try:
            n = self._write_io(data, time.monotonic() + budget, None, stall_s)
        except WriteStopped as stopped:
            self.tx_bytes += stopped.written
            raise
        self.tx_bytes += n
        return n

    def _write_io(
        self, data: bytes, deadline: float, cancel: threading.Event | None, stall_s: float | None = None
    ) -> int:
        """Write under the I/O lock before ``deadline``, ending once no byte was taken for ``stall_s``
        (default ``DEFAULT_STALL_MS``; a handle without a bounded write is trusted to return); raises
        ``WriteStopped`` with the count that went out."""
        if not self._io_lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise WriteStopped(0)
        try:
            if isinstance(self.handle, BoundedWrite):
                stall = DEFAULT_STALL_MS / 1000 if stall_s is None else stall_s
                left = max(0.0, deadline - time.monotonic())
                return self.handle.write_within(data, left, cancel, stall=stall)
            return self.handle.write(data)
        finally:
            self._io_lock.release()

    def _wake_writer(self) -> None:
        if isinstance(self.handle, BoundedWrite):
            self.handle.wake_writer()

    def turn(self, timeout_s: float | None = None, busy: Callable[[], BaseException] | None = None) -> TxTurn:
        """The TX turn (see ``TxTurn``), within ``timeout_s``: a write queued behind a stuck one
        times out too, instead of waiting for ever."""
        return TxTurn(self._lock, timeout_s, busy)

    async def write_locked(
        self,
        data: bytes,
        pace: Pace | None = None,
        timeout_s: float | None = None,
        stall_s: float | None = None,
    ) -> WriteOutcome:
        """Write ``data`` within ``timeout_s`` (default: ``write_budget_s`` at 115200 baud), ending
        early once the device took no byte for ``stall_s`` (default ``DEFAULT_STALL_MS``); the caller
        holds the turn (``async with tx.turn(...)``). A cancelled write stops at once: the worker is
        woken, then waited for."""
        budget = write_budget_s(len(data), 115200, pace) if timeout_s is None else timeout_s
        first = self._write_nowait(data) if pace is None else 0
        if first == len(data):
            self.tx_bytes += first
            return WriteOutcome(first)
        return await self._write_in_worker(data, first, pace, budget, stall_s)

    def _write_nowait(self, data: bytes) -> int:
        """Write on the event loop what the port takes at once, when that cannot block: a PTY or a
        socket whose descriptor has room (no drain to wait for). A command of a few bytes then costs
        no thread hop; whatever is left goes the bounded way in a worker."""
        nowait = self._nowait
        if nowait is None or not self._io_lock.acquire(blocking=False):
            return 0
        try:
            return nowait.write_nowait(data)
        finally:
            self._io_lock.release()

    async def _write_in_worker(
        self, data: bytes, first: int, pace: Pace | None, budget: float, stall_s: float | None = None
    ) -> WriteOutcome:
        """The bounded, cancellable write of ``data[first:]`` in a worker thread (``first`` bytes
        already went out on the loop)."""
        deadline = time.monotonic() + budget
        rest = data[first:] if first else data
        stop = threading.Event()
        finished = threading.Event()
        started = threading.Event()  # the worker picked the job up (a call cancelled first never runs it)
        written = [first]
        timed_out = [False]
        closed = [False]
        stalled = [False]

        def run() -> None:
            started.set()
            try:
                pieces = [(rest, 0.0)] if pace is None else pace_chunks(data, pace)
                for piece, pause in pieces:
                    if stop.is_set():
                        return
                    written[0] += self._write_io(piece, deadline, stop, stall_s)
                    if pause and written[0] < len(data):
                        if stop.wait(max(0.0, min(pause, deadline - time.monotonic()))):
                            return
                        if time.monotonic() >= deadline:
                            timed_out[0] = True
                            return
            except WriteStopped as stopped:
                written[0] += stopped.written
                stalled[0] = stopped.reason == "stalled"
                timed_out[0] = stopped.reason == "timeout" or stalled[0]
                closed[0] = stopped.reason == "closed"
            finally:
                finished.set()

        try:
            # The backstop for a handle that cannot bound its own write (pyserial URL handlers): the
            # worker is left behind (holding the I/O lock until it returns), the call is not.
            with anyio.move_on_after(budget + ABANDON_GRACE_S) as backstop:
                await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
            if backstop.cancelled_caught:
                stop.set()
                timed_out[0] = True
        except anyio.get_cancelled_exc_class():
            stop.set()
            self._wake_writer()
            if started.is_set():  # a woken writer stops at once; a worker never waits unbounded
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(finished.wait, ABANDON_GRACE_S)
            raise
        finally:
            self.tx_bytes += written[0]
        return WriteOutcome(written[0], timed_out[0], closed[0], stalled[0])

    async def write(self, data: bytes, timeout_s: float | None = None) -> WriteOutcome:
        """Queue (FIFO) for the turn and write, all within one deadline (default ``write_budget_s``;
        unlogged: the engine writes through ``Connection.send``)."""
        budget = write_budget_s(len(data), 115200, None) if timeout_s is None else timeout_s
        start = time.monotonic()
        try:
            async with self.turn(budget):
                return await self.write_locked(data, None, max(0.0, budget - (time.monotonic() - start)))
        except TxBusy:
            return WriteOutcome(0, True)
