"""EventWatch: the crash/boot/reset detector of one connection: a thread of its own, and the pump in a flood.

A trickle: ``wake()`` (the pump, after each chunk) sets a flag; the watch thread scans ``BATCH_S`` later (on
to ``TRICKLE_BATCH_S`` while under ``TRICKLE_BYTES`` wait; at once when a result or an ``until`` read waits
for it, or the port ended). A flood (a quarter of the ring unscanned, at most ``BATCH_BYTES``): the pump
scans it itself between two reads, and before a chunk would push out of the ring bytes not yet scanned
(``room_for``) — handing it to the thread made the two take turns on the GIL after every read (events on
cost a third of ingest) and let a 256 KiB ring drop half of a flood unscanned. One scanner at a time
(``_scan_turn``). A scan reads the ring by offset in pieces of at most ``PIECE`` bytes under the
connection's lock and feeds them to :class:`~serial_mcp.core.events.EventDetector` outside it, with each
chunk's arrival time. Bytes it could not scan (``MAX_LAG`` behind: a flood that matches every line costs
~170 ms a MiB; a ring smaller than a chunk) are skipped to the newest ``RESUME_BACK`` and counted
(``bytes_not_scanned``): received data is never dropped for it, and what was not looked at is said. When
the port is lost (:meth:`end_of_stream`) what is open is completed at once (a board that panicked and went
away still gets its crash).

Each event found is numbered (``seq``), kept (the last ``MAX_KEPT``), decoded against the connection's
firmware ELF when one is set (addresses → ``function at file:line``), appended to the connection's event
log (recordings, ``export_log`` and the log resource carry it), counted for ``get_status``, and wakes the
connection's readers (``read(until=[...])``). What each caller was shown is kept per cursor
(:meth:`take_unseen`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import weakref
from collections import deque
from typing import TYPE_CHECKING, Any, Final

from serial_mcp.serial.event_text import Frames, NotScanned, SeenEvent, Watched, line_change_cause, listed

if TYPE_CHECKING:
    from serial_mcp.core.events import Event, EventDetector
    from serial_mcp.serial.firmware_elf import LoadedElf

log = logging.getLogger(__name__)

PIECE: Final = 512 * 1024  # bytes copied out of the ring per lock hold (a memcpy; fewer, larger feeds)
MAX_LAG: Final = 4 << 20  # bytes behind the live edge after which the watch skips ahead
RESUME_BACK: Final = 256 * 1024  # ... to this far before the live edge (the newest bytes are scanned)
STOP_DRAIN: Final = 4 << 20  # bytes still scanned when the connection closes
MAX_KEPT: Final = 1000  # events kept per connection (older ones are counted as evicted)
MAX_SHOWN: Final = 20  # events listed in one result (the rest are counted)
MAX_SKIPS_KEPT: Final = 16  # ranges not scanned that are kept to be named (all are counted)
# Chunks are fed together (at the first's time) while each came within GROUP_GAP_S of the last and the group
# spans < GROUP_SPAN_S: a silence always starts a feed (the detector sees quiet); a feed costs ~40 us.
GROUP_GAP_S: Final = 0.3
GROUP_SPAN_S: Final = 0.5
BATCH_S: Final = 0.05  # after new bytes, the watch waits this long before it scans (unless asked now)
TRICKLE_BYTES: Final = 16 * 1024  # ... and while fewer than this wait, on to TRICKLE_BATCH_S
TRICKLE_BATCH_S: Final = 0.5
BATCH_BYTES: Final = 512 * 1024  # unscanned bytes that make a flood (or a quarter of a smaller ring)
PIECE_MIN: Final = 4096
TURN_WAIT_S: Final = 0.5  # longest the pump waits for the watch thread's turn before it reads on
SETTLE_S: Final = 0.2  # longest a result waits for the watch to reach its end offset
SETTLE_LAG: Final = 512 * 1024  # a watch further behind than this is not waited for (a scan is due)
MAX_RESTARTS: Final = 20  # a watch that failed is restarted (past what it was scanning) this many times
EXPECT_WINDOW_S: Final = 5.0  # a reset the user caused explains the first boot within this (issue 38)


class EventWatch:
    """The detector of one connection, its thread and what it found; see the module docstring."""

    def __init__(self, conn: Watched, detector: EventDetector | None = None) -> None:
        self._conn = weakref.ref(conn)
        self._name = f"events-{conn.id}"
        if detector is None:  # its signatures and prefilter are built by the first open, not at start-up
            from serial_mcp.core.events import EventDetector

            detector = EventDetector()
        self.detector = detector
        self.elf: LoadedElf | None = None
        self._wake = threading.Event()
        self._now = threading.Event()  # scan without waiting BATCH_S: a result settles, the port ended
        self._stopping = False
        self._flush_pending = False
        self._thread: threading.Thread | None = None
        # one scanner at a time: the watch thread, or the pump itself in a flood (``wake``)
        self._scan_turn = threading.Lock()
        self._flooded_at = 0.0  # when the pump last scanned a flood itself (its tail is no trickle)
        self._capacity = capacity = conn.ring.capacity
        self._flood_bytes = min(BATCH_BYTES, max(PIECE_MIN, capacity // 4))
        self._lock = threading.Lock()  # the fields below
        self._pos = 0  # next ring offset to scan
        self._events: deque[SeenEvent] = deque(maxlen=MAX_KEPT)
        self._seq = 0
        # cursor key -> (every seq up to this one was shown to it, and these after it)
        self._seen: dict[str, tuple[int, set[int]]] = {}
        self._counts = dict.fromkeys(("boot", "stage", "reset", "crash", "exception", "boot_loop"), 0)
        # for the detector (issue 38), from any thread: the host's writes, the resets a user caused
        self._writes: deque[tuple[int, float]] = deque(maxlen=8)
        self._resets: deque[tuple[str, int, float, float]] = deque(maxlen=16)
        conn.add_listener(self._on_log)
        self._last: SeenEvent | None = None
        self.not_scanned = NotScanned(MAX_SKIPS_KEPT)
        self.restarts = 0  # times the watch failed and was restarted (get_status says so)
        self.not_decoded = 0  # events whose addresses could not be looked up in the ELF
        self._failure: str | None = None  # what the last failure was
        self._piece_end = 0  # the end of the piece being scanned (a failure skips it)
        self._settles: list[tuple[int, asyncio.Future[None]]] = []
        # (scan position, offset): nothing to wait for before that offset while the watch is at that position
        self._clear_to: tuple[int, int] | None = None
        # a connection dropped without close (a dropped engine) ends the thread too: it finds no connection
        weakref.finalize(conn, self._ask_now)

    # --- lifecycle ----------------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()

    def wake(self, end: int) -> None:
        """New bytes are in the ring up to offset ``end`` (the pump calls this; a trickle costs a flag and
        a compare): a trickle is looked at ``BATCH_S`` later; a flood (a quarter of the ring unscanned) the
        pump scans itself, here."""
        if not self._wake.is_set():
            self._wake.set()
        if end - self._pos >= self._flood_bytes:
            self._scan_here(urgent=False)

    def room_for(self, end: int, size: int) -> None:
        """The pump is about to append ``size`` bytes to a ring that ends at ``end``: what the ring would
        drop before the detector saw it is scanned first, waiting for the watch thread's turn if it has it
        (it is scanning, and with the pump here no more bytes come: it ends within a ring's worth)."""
        if end + size - self._pos > self._capacity:
            self._scan_here(urgent=True)

    def _scan_here(self, urgent: bool) -> None:
        """The pump scans, if it gets the turn (see the module docstring); else the watch thread is asked
        to. A failure here is left to the watch thread, which scans the same bytes again and restarts."""
        conn = self._conn()
        timeout = TURN_WAIT_S if urgent else -1
        if conn is None or self._failure or self._stopping or not self._scan_turn.acquire(urgent, timeout):
            self._now.set()
            return
        self._flooded_at = time.monotonic()
        try:
            self._scan(conn, None)
            if found := self.detector.poll(time.time()):
                self._publish(conn, found)
        except Exception as exc:  # the watch thread's restart logic owns failures
            self._failure = f"{type(exc).__name__}: {exc}"[:200]
            self._now.set()
        finally:
            self._scan_turn.release()

    def expect_reset(self, cause: str, window: float | None = None, offset: int | None = None) -> None:
        """A reset the user caused or expected (any thread): the first boot after it (within ``window``
        seconds) is reported as a ``reset`` with ``cause`` and counts toward no boot loop."""
        conn = self._conn()
        if conn is None:
            return
        at = conn.ring.end_offset if offset is None else offset  # an int read: no lock (listeners hold it)
        self._resets.append((cause, at, time.time(), EXPECT_WINDOW_S if window is None else window))

    def _on_log(self, event: Any, data: bytes | None) -> None:
        """Connection listener: the host's writes (a banner right after one answers it: no boot), and
        the DTR/RTS changes an RFC 2217 client or a caller made (a reset the user caused)."""
        kind = event.type
        if kind == "rx" or kind == "event":
            return
        if kind == "tx":
            self.note_tx()
        elif kind == "control" and event.fields.get("applied", True):
            self.expect_reset(line_change_cause(self._conn(), event.fields))

    def note_tx(self) -> None:
        conn = self._conn()
        if conn is not None:
            self._writes.append((conn.ring.end_offset, time.time()))

    def _hand_over(self) -> None:
        """Give the detector the writes and resets noted so far (watch thread, after copying a piece:
        a note made later is at or past its end)."""
        detector, writes, resets = self.detector, self._writes, self._resets
        while writes:
            detector.note_tx(*writes.popleft())
        while resets:
            detector.expect_reset(*resets.popleft())

    def _ask_now(self) -> None:
        self._now.set()
        self._wake.set()

    def use_elf(self, elf: LoadedElf | None) -> None:
        """Name crash backtraces' functions and lines from ``elf`` from now on (None: no more)."""
        self.elf = elf

    def end_of_stream(self) -> None:
        """The port was lost: complete what is open once everything received is scanned."""
        self._flush_pending = True
        self._ask_now()

    def stop(self, join_timeout: float = 5.0) -> None:
        """Scan what is left (up to ``STOP_DRAIN`` bytes), complete what is open, end the thread
        (blocking: call off the event loop)."""
        self._stopping = True
        self._ask_now()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(join_timeout)

    # --- what callers ask -----------------------------------------------------------------------------

    @property
    def bytes_not_scanned(self) -> int:
        return self.not_scanned.bytes

    @property
    def scanned_to(self) -> int:
        return self._pos

    @property
    def last_seq(self) -> int:
        return self._seq

    def events(self, since: int = 0) -> list[SeenEvent]:
        with self._lock:
            return [e for e in self._events if e.seq > since]

    def first(self, kinds: frozenset[str], begin: int, after_seq: int) -> SeenEvent | None:
        """The first event of ``kinds`` that ends past ``begin`` or was found after ``after_seq``."""
        with self._lock:
            for e in self._events:
                if e.event.kind in kinds and (e.event.end > begin or e.seq > after_seq):
                    return e
        return None

    def take_unseen(self, key: str, upto: int, since: int = 0) -> list[dict[str, Any]] | None:
        """The events ``key`` (a caller's cursor) has not been shown yet that begin before ``upto`` (the
        end of what its result returns: an event further on waits for the result that reaches it),
        compact, each with its text ``line``; they count as shown from now on. Past ``MAX_SHOWN`` the most
        important are listed (boot loops and crashes before boots; the newest of a rank) and the first says
        how many were left out (``earlier``). A range the watch skipped (it shed a flood) that this caller
        was not told of follows as a ``not_scanned`` item. None when there is nothing to say. Events before
        ``since`` (a summary's window start) are left for a result that covers them."""
        with self._lock:
            hw, extra = self._seen.get(key, (0, set()))
            new = []
            if self._seq > hw:
                new = [
                    e
                    for e in self._events
                    if e.seq > hw and e.seq not in extra and since <= _position(e.event) < upto
                ]
                extra = extra | {e.seq for e in new}
                while hw + 1 in extra or (self._events and hw + 1 < self._events[0].seq):
                    extra.discard(hw + 1)
                    hw += 1
                self._seen[key] = (hw, extra)
        skipped = self.not_scanned.take(key, upto) if self.not_scanned.skips else []
        if not new and not skipped:
            return None
        return listed(new, MAX_SHOWN) + skipped

    def forget(self, key: str) -> None:
        with self._lock:
            self._seen.pop(key, None)
        self.not_scanned.forget(key)

    def status(self) -> dict[str, Any]:
        """The counters ``get_status`` shows."""
        with self._lock:
            c = self._counts
            out: dict[str, Any] = {
                "boots": c["boot"],
                "crashes": c["crash"],
                "exceptions": c["exception"],
                "resets": c["reset"],
                "boot_loops": c["boot_loop"],
                "bytes_scanned": self.detector.counters()["bytes_scanned"],
            }
            if (last := self.not_scanned.last()) is not None:
                out["bytes_not_scanned"] = self.not_scanned.bytes
                out["last_not_scanned"] = list(last)
            if self._last is not None:
                out["last"] = self._last.compact()
            if self.elf is not None:
                out["elf"] = self.elf.path
            if self.not_decoded:
                out["not_decoded"] = self.not_decoded
            if self.restarts:
                out["watch_restarts"] = self.restarts
                out["watch_failure"] = self._failure
                if self.restarts > MAX_RESTARTS:
                    out["watch_stopped"] = True
        return out

    async def settle(self, offset: int, timeout: float = SETTLE_S) -> None:
        """Wait (up to ``timeout``) until the watch has scanned up to ``offset``, so a result lists the
        events its own bytes hold; a watch far behind (a flood) is not waited for."""
        if self._thread is None or offset - self._pos > SETTLE_LAG:
            return
        if self._pos >= offset and not self._flush_pending:
            return
        conn = self._conn()
        if conn is None or (not self._flush_pending and not self._may_emit(conn, offset)):
            return  # nothing those bytes hold can make an event: no thread hop for a plain reply
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with self._lock:
            if self._pos >= offset and not self._flush_pending:
                return
            self._settles.append((offset, fut))
        self._ask_now()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(fut, timeout)
        with self._lock:
            self._settles = [s for s in self._settles if s[1] is not fut]

    def _may_emit(self, conn: Watched, offset: int) -> bool:
        """Whether the bytes the watch has yet to scan up to ``offset`` could make an event. A "no" is
        remembered (``_clear_to``) while the watch has not moved: the next result's question (a read loop
        asks one per call) only searches the bytes that came since, plus a trigger's length before them."""
        pos, detector = self._pos, self.detector
        if offset <= pos:
            return detector.may_emit(b"")
        span = detector.trigger_span
        memo = self._clear_to
        if span is not None and memo is not None and memo[0] == pos and pos < memo[1] <= offset:
            lo = max(pos, memo[1] - span + 1)
            found = detector.may_emit(conn.read_ring(lo, offset - lo).data, after_tail=lo == pos)
        else:
            found = detector.may_emit(conn.read_ring(pos, offset - pos).data)
        self._clear_to = None if found else (pos, offset)
        return found

    # --- the thread -----------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._watch():  # failed: restarted past what it was scanning, a bounded number of times
                if not self._restart():
                    return
        finally:
            self._resolve_settles(all_=True)

    def _restart(self) -> bool:
        """After a failure: skip the piece it was scanning (counted as not scanned) and go on, unless it
        failed too often."""
        with self._lock:
            self.restarts += 1
            if self.restarts > MAX_RESTARTS:
                log.error("event watch %s failed %d times: stopped", self._name, self.restarts)
                return False
        if self._piece_end > self._pos:
            self.not_scanned.add(self._pos, self._piece_end)
            self._pos = self._piece_end
        return True

    def _watch(self) -> bool:
        """The watch's loop; True when it ended as asked, False when it failed (logged)."""
        try:
            while True:
                deadline = self.detector.deadline()
                timeout = None if deadline is None else max(0.0, deadline - time.time())
                if self._wake.wait(timeout) and not self._now.wait(BATCH_S):
                    # new bytes: look at them together, BATCH_S later (the pump's wake-up of a waiting read
                    # never races this thread for them); a trickle (under TRICKLE_BYTES by then) waits on
                    # to TRICKLE_BATCH_S: a streaming port costs a scan per TRICKLE_BATCH_S, a flood none more
                    conn = self._conn()
                    flood_tail = time.monotonic() - self._flooded_at < TRICKLE_BATCH_S  # scanned BATCH_S on
                    if (
                        conn is not None
                        and conn.ring.end_offset - self._pos < TRICKLE_BYTES
                        and not flood_tail
                    ):
                        self._now.wait(TRICKLE_BATCH_S - BATCH_S)
                    del conn
                self._wake.clear()
                self._now.clear()
                conn = self._conn()
                if conn is None:
                    return True
                stopping, ending = self._stopping, self._flush_pending
                with self._scan_turn:  # published in the turn too: events keep the order of their bytes
                    self._scan(conn, STOP_DRAIN if stopping else None)
                    ended = stopping or ending
                    found = self.detector.flush() if ended else self.detector.poll(time.time())
                    if found:
                        self._publish(conn, found)
                if ending:
                    self._flush_pending = False
                if ending:
                    self._resolve_settles()
                del conn
                if stopping:
                    return True
        except Exception as exc:  # a bug must not go unseen, nor take the connection down
            log.exception("event watch %s failed", self._name)
            self._failure = f"{type(exc).__name__}: {exc}"[:200]
            return False

    def _scan(self, conn: Watched, budget: int | None) -> None:
        """Feed everything new to the detector, piece by piece (or ``budget`` bytes, then skip)."""
        detector = self.detector
        scanned = 0
        while True:
            with conn.thread_lock:
                ring = conn.ring
                end = ring.end_offset
                pos = self._pos
                if end - pos > MAX_LAG or (budget is not None and scanned >= budget and end > pos):
                    skip_to = max(pos, ring.start_offset, end - RESUME_BACK)
                    budget = None if budget is None else scanned + RESUME_BACK
                else:
                    skip_to = max(pos, ring.start_offset)
                if skip_to > pos:
                    self.not_scanned.add(pos, skip_to)
                    pos = skip_to
                rr = ring.read(pos, PIECE)
                stamps = ring.stamps(rr.from_offset, rr.next_offset) if rr.data else []
            if self._writes or self._resets:
                self._hand_over()
            if not rr.data:
                self._pos = pos
                self._resolve_settles()
                return
            found: list[Event] = []
            data, base = rr.data, rr.from_offset
            self._piece_end = rr.next_offset
            lo = base
            i = 0
            while i < len(stamps):
                t0 = stamps[i][1]
                j = i
                if stamps[-1][1] - t0 < min(GROUP_GAP_S, GROUP_SPAN_S):  # a flood's piece: all together
                    j = len(stamps) - 1
                while (
                    j + 1 < len(stamps)
                    and stamps[j + 1][1] - stamps[j][1] < GROUP_GAP_S
                    and stamps[j + 1][1] - t0 < GROUP_SPAN_S
                ):
                    j += 1
                hi = min(stamps[j][0], rr.next_offset)
                if hi > lo:
                    found += detector.feed(data[lo - base : hi - base], lo, t0)
                    lo = hi
                i = j + 1
            if lo < rr.next_offset:  # times no longer known (cannot happen under the lock; be safe)
                found += detector.feed(data[lo - base :], lo, time.time())
            scanned += len(data)
            self._pos = rr.next_offset
            if found:
                self._publish(conn, found)
            self._resolve_settles()

    def _publish(self, conn: Watched, found: list[Event]) -> None:
        elf = self.elf  # decoded here, outside the lock: a first lookup may read a whole compile unit
        decoded = [self._decode(elf, e) if elf is not None else () for e in found]
        seen: list[SeenEvent] = []
        with self._lock:
            for event, frames in zip(found, decoded, strict=True):
                self._seq += 1
                item = SeenEvent(self._seq, event, frames)
                self._events.append(item)
                self._counts[event.kind] += 1
                if event.kind != "stage":
                    self._last = item
                seen.append(item)
        for item in seen:
            conn.record_event(item)
        conn.wake_waiters()

    def _decode(self, elf: LoadedElf, event: Event) -> Frames:
        """The event's frames; a lookup that fails leaves this event not decoded, never the watch ended."""
        try:
            return elf.decode_event(event)
        except Exception:
            log.warning("event watch %s: frames not decoded", self._name, exc_info=True)
            self.not_decoded += 1
            return ()

    def _resolve_settles(self, all_: bool = False) -> None:
        if not self._settles:  # the common case, read without the lock: a settle() appending now asks
            return  # for a scan after it appended (_ask_now), and that scan resolves it
        with self._lock:
            if not self._settles:
                return
            pos = -1 if self._flush_pending and not all_ else self._pos
            done = [s for s in self._settles if all_ or s[0] <= pos]
            self._settles = [s for s in self._settles if s not in done]
        for _, fut in done:
            with contextlib.suppress(RuntimeError):
                fut.get_loop().call_soon_threadsafe(_resolve, fut)


def _position(event: Event) -> int:
    """Where a result meets the event: its first line; a boot loop at the boot that made it one."""
    return event.boots[-1] if event.boots else event.offset


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
