"""RxPump: the one thread per connection that moves bytes from the port into the ring.

It blocks in ``PortHandle.read_chunk`` (no polling), hands each chunk with its arrival time to
``on_data``, and reports how it ended through ``on_stop`` exactly once: ``None`` for a requested
stop, the exception for a read error or EOF. A pump never dies silently.

``between_reads`` runs a function on the pump thread between two reads: at that moment no chunk is
in flight, which is what makes ``capture_boot``'s purge-and-mark exact.

Lingering: while the port trickles (under ``LINGER_BUDGET`` bytes in the last one to two
``TRICKLE_WINDOW_S``), if ``may_linger()`` says nobody needs the bytes at once (no waiting read,
none served by the last chunk, no armed responder, no recording or mirror), the pump waits before its
next read: as long as ``LINGER_BYTES`` take to come at the recent rate, at most ``LINGER_S``. A port
at 115200 baud (11.5 KB/s) then costs one wake-up, lock round trip and log entry per ~0.25 s instead
of one per device write; what waits in the kernel's tty buffer meanwhile stays under ``LINGER_BYTES``
(the n_tty buffer holds 4 KiB). The handle does the waiting
(``linger(seconds)``, woken by ``interrupt``); a handle without ``linger`` never lingers.
``poke()`` (a read starts waiting), ``stop()`` and ``between_reads()`` end a linger at once; the
bytes wait in the kernel's tty buffer meanwhile, and their arrival time is the time of the read
that takes them.
"""

from __future__ import annotations

import concurrent.futures
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from serial_mcp.serial.handle import Lingering, PortHandle

log = logging.getLogger(__name__)

LINGER_S = 0.25  # at most this long between two reads of a trickle nobody waits for
LINGER_BYTES = 3072  # ... and no longer than this many bytes take to come at the recent rate
# A port that delivered fewer bytes than this in the current and previous window trickles (under
# ~20-40 KB/s; a 115200-baud device sends 11.5 KB/s). Budget x linger bounds what waits in the
# kernel's tty buffer during a linger: at most ~4 KiB, well inside it.
LINGER_BUDGET = 4096
TRICKLE_WINDOW_S = 0.1


class Trickle:
    """Is the port trickling? Bytes in the current and the previous window, under the budget.

    A flood (1 MB/s) is read back to back, never lingered over: the kernel's tty buffer must not
    fill while the pump sleeps. Only the first chunk after quiet can linger into a burst (≤ ``LINGER_S``).
    """

    __slots__ = ("_bytes", "_last", "_prev", "_start")

    def __init__(self) -> None:
        self._start = -1e9
        self._bytes = 0
        self._prev = 0
        self._last = -1e9  # when the previous chunk was read

    def note(self, n: int, t: float) -> float:
        """Count a chunk of ``n`` bytes read at ``t``; while the recent rate is a trickle, how long the
        next read may wait (the time ``LINGER_BYTES`` take at the rate of this chunk, at most
        ``LINGER_S``), else 0."""
        age = t - self._start
        if age >= TRICKLE_WINDOW_S:
            self._prev = self._bytes if age < 2 * TRICKLE_WINDOW_S else 0
            self._start = t
            self._bytes = 0
        self._bytes += n
        since, self._last = t - self._last, t
        if self._bytes + self._prev >= LINGER_BUDGET:
            return 0.0
        return min(LINGER_S, LINGER_BYTES * max(since, 0.0) / n)


class RxPump:
    """Owns the reading side of one port handle."""

    def __init__(
        self,
        handle: PortHandle,
        on_data: Callable[[bytes, float], None],
        on_stop: Callable[[BaseException | None], None],
        name: str = "rx-pump",
        may_linger: Callable[[], bool] | None = None,
    ) -> None:
        self._handle = handle
        self._on_data = on_data
        self._on_stop = on_stop
        self._stopping = threading.Event()
        linger: Callable[[float], None] | None = handle.linger if isinstance(handle, Lingering) else None
        self._linger = linger if may_linger is not None else None
        self._may_linger: Callable[[], bool] = may_linger or _never
        self.lingering = False  # True from the linger check until the linger ends
        self._running = False
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], concurrent.futures.Future[Any]]] = (
            queue.SimpleQueue()
        )
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._running = True
        self._thread.start()

    def stop(self, join_timeout: float = 5.0) -> None:
        """Ask the pump to end and wait for it (call from a worker thread, not the event loop)."""
        self._stopping.set()
        self._handle.interrupt()
        if threading.current_thread() is not self._thread:
            self._thread.join(join_timeout)

    def between_reads(self, fn: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        """Run ``fn`` on the pump thread once the current read returns; the future holds its result.

        If the pump is not running, ``fn`` runs at once in the caller (no read can be in flight).
        """
        fut: concurrent.futures.Future[Any] = concurrent.futures.Future()
        if not self._running:
            _run_job(fn, fut)
            return fut
        self._jobs.put((fn, fut))
        self._handle.interrupt()
        if not self.running_now():  # the pump ended meanwhile (another thread): the job still runs
            self._run_jobs()
        return fut

    def poke(self) -> None:
        """Read the next bytes now: a reader started waiting (ends a linger; free otherwise)."""
        if self.lingering:
            self._handle.interrupt()

    def running_now(self) -> bool:
        """Read afresh: the pump thread changes it (a plain attribute read would be narrowed)."""
        return self._running

    def _run_jobs(self) -> None:
        while True:
            try:
                fn, fut = self._jobs.get_nowait()
            except queue.Empty:
                return
            _run_job(fn, fut)

    @property
    def alive(self) -> bool:
        """False once the read loop has ended (set before ``on_stop`` runs, so it is never stale)."""
        return self._running

    def _run(self) -> None:
        read = self._handle.read_chunk
        on_data = self._on_data
        now = time.time
        may_linger = self._may_linger
        linger = self._linger
        jobs = self._jobs
        trickle = Trickle()
        error: BaseException | None = None
        try:
            while not self._stopping.is_set():
                data = read()
                if data:
                    t = now()
                    on_data(data, t)
                    if linger is not None and (wait := trickle.note(len(data), t)) > 0:
                        self.lingering = True  # before the check: a waiter that comes after it pokes
                        if may_linger() and jobs.empty() and not self._stopping.is_set():
                            linger(wait)
                        self.lingering = False
                if not jobs.empty():
                    self._run_jobs()
        except BaseException as exc:
            if not self._stopping.is_set():
                error = exc
                log.info("rx pump for %s stopped: %s", self._handle.name, exc)
        finally:
            self._running = False
            self._run_jobs()
            self._on_stop(error)


def _never() -> bool:
    return False


def _run_job(fn: Callable[[], Any], fut: concurrent.futures.Future[Any]) -> None:
    if not fut.set_running_or_notify_cancel():
        return
    try:
        fut.set_result(fn())
    except BaseException as exc:
        fut.set_exception(exc)
