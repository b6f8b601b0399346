"""Connection: one open port — its pump thread, RX ring, cursors, TX session, lines and lifecycle.

Thread rules: the pump thread only calls ``_on_data`` / ``_on_pump_stop`` (which touch the ring
under ``thread_lock`` and schedule work on the event loop); respond answers are written by the
connection's ``AnswerWriter`` on a thread of its own, never by the pump. Everything else runs on the
loop. Waiters are woken with ``loop.call_soon_threadsafe``; bursts are coalesced into one wake-up.

The engine uses the named operations (``rx_status``, ``flush_cursor``, ``unread_before``, ``send``,
``tx.turn`` ...), never the lock, ring or cursor table. The lifecycle (loss, reconnect, lend and
take back) is ``serial.port_lifecycle.PortLifecycle``, a base of ``Connection``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

import anyio

from serial_mcp import messages
from serial_mcp.core.connection_options import ConnectionOptions
from serial_mcp.core.cursors import CursorTable
from serial_mcp.core.eventlog import EventLog, LogEvent
from serial_mcp.core.pace import Pace
from serial_mcp.core.reconnect import ReconnectPolicy
from serial_mcp.core.ring import RingRead, RxRing
from serial_mcp.core.screen import TerminalScreen
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import ErrorCode, OperationTimeout
from serial_mcp.serial.event_text import SeenEvent
from serial_mcp.serial.event_watch import EventWatch
from serial_mcp.serial.handle import PortHandle
from serial_mcp.serial.port_controls import PortControls
from serial_mcp.serial.port_lifecycle import PortLifecycle
from serial_mcp.serial.port_lifecycle import State as State  # re-exported: connection.State, as before
from serial_mcp.serial.pump import RxPump
from serial_mcp.serial.responder import AnswerWriter
from serial_mcp.serial.tx import TxSession, WriteOutcome, acquire_within

log = logging.getLogger(__name__)

# A listener sees every event as it happens, with the rx/tx bytes; it must not block (enqueue only).
Listener = Callable[[LogEvent, bytes | None], None]


class Snapshot(NamedTuple):
    """A consistent view of the ring edges and state, taken under the lock (several per call: a
    tuple costs less than half a frozen dataclass to build)."""

    start_offset: int
    end_offset: int
    state: State
    last_rx_time: float | None


class RxStatus(NamedTuple):
    """The RX side at one instant (``Connection.rx_status``)."""

    start_offset: int  # the oldest byte the ring still holds
    end_offset: int  # one past the newest
    bytes_evicted: int  # dropped by the ring over the connection's life
    cursors: tuple[tuple[str, int], ...]  # (name, offset) of every cursor


class Connection(PortLifecycle, PortControls):
    """An open port and everything that consumes it (its lifecycle: ``PortLifecycle``)."""

    def __init__(
        self,
        connection_id: str,
        port: str,
        handle: PortHandle,
        settings: SerialSettings,
        rx_buffer_size: int,
        loop: asyncio.AbstractEventLoop,
        options: ConnectionOptions | None = None,
        *,
        reopen: Callable[[SerialSettings], PortHandle] | None = None,
        reconnect_policy: ReconnectPolicy | None = None,
    ) -> None:
        self.id = connection_id
        self.port = port
        self.handle = handle
        self.settings = settings
        self.options = options or ConnectionOptions()  # default codecs, pacing, bound profile
        self.loop = loop
        self._lock = threading.Lock()  # ring, cursors, log, listeners, responders (see thread_lock)
        self.ring = RxRing(rx_buffer_size)
        self.cursors = CursorTable(0)
        self.tx = TxSession(handle)
        self.line_lock = asyncio.Lock()  # set_dtr_rts, send_break and capture_boot's pulse never interleave
        self.dtr: bool | None = None  # last level we set (None: untouched since open)
        self.rts: bool | None = None
        self.state: State = "open"
        self.last_error: str | None = None
        self.bytes_lost_total = 0  # bytes that reads were told they lost (ring overrun before they read)
        self.opened_at = time.time()
        self.reconnect_policy = reconnect_policy
        self.reconnect_attempts = 0  # attempts since the port was last up for real (see _stayed_up)
        self._attached_at: float | None = None  # when the last reconnect attached a new handle
        self.reconnects = 0  # successful reconnects over the connection's life
        self.log = EventLog()
        self.listeners: list[Listener] = []
        self.recorder: Any = None  # a serial.recorder.Recorder while a recording runs
        self.responders: list[Any] = []  # serial.responder.Responder rules armed by a running call
        self.answers = AnswerWriter(self)  # their answers, written off the pump thread
        self.closers: list[Callable[[], None]] = []  # blocking clean-ups run (off the loop) on close
        self.mirror: Any = None  # a serial.mirror.PtyMirror when open(mirror=...)
        self.lend: Any = None  # a serial.lending.Lend while the port is lent (state "released")
        self.rfc2217: Any = None  # a serial.rfc2217_mirror.Rfc2217Mirror when open(mirror="rfc2217")
        self.lent_to: str | None = None  # the RFC 2217 client that writes to the port now (responders held)
        self.owner = "local"  # the caller (engine.access.Caller.key) that opened it
        self.share = "read"  # what other callers may do: "read" | "write"
        self._cursor_locks: dict[str, asyncio.Lock] = {}
        self._reopen = reopen
        self._reconnect_task: asyncio.Task[None] | None = None
        self._last_rx_time: float | None = None
        self._waiters: list[asyncio.Future[None]] = []
        self._wake_pending = False
        self._served = False  # the last chunk went to a waiting read: a conversation, not a stream
        self._generation = 0
        self._pump = self._new_pump(handle)
        self.events = EventWatch(self)  # boots, resets and crashes, found off the pump thread (issue 24)

    def _new_pump(self, handle: PortHandle) -> RxPump:
        """The pump calls back through a weak reference: it never keeps a dropped connection (and
        its ring) alive, and no cycle waits for the garbage collector."""
        gen = self._generation
        me = weakref.ref(self)

        def on_data(data: bytes, t: float) -> None:
            conn = me()
            if conn is not None:
                conn._on_data(data, t)

        def on_stop(error: BaseException | None) -> None:
            conn = me()
            if conn is not None:
                conn._on_pump_stop(error, gen)

        def may_linger() -> bool:  # nobody needs the next bytes at once (see RxPump: lingering)
            conn = me()
            # a recording keeps exact chunk timing, a mirror its latency; other listeners (resource
            # notifications, coalesced per 250 ms anyway) do not stop a linger. Nor after a reply a
            # read waited for: the next command's read would have to poke the pump out of it first.
            if conn is None or conn._waiters or conn._served or conn.responders:
                return False
            return conn.recorder is None and conn.mirror is None and conn.rfc2217 is None

        return RxPump(handle, on_data, on_stop, name=f"rx-pump-{self.id}", may_linger=may_linger)

    def start(self) -> None:
        self.record("open", port=self.port, settings=self.settings.as_dict())  # before any rx
        self.events.start()
        self.watch_opens()  # another program opening the node we hold is reported (issue 36.8)
        self._pump.start()

    def record(self, kind: str, data: bytes | None = None, **fields: Any) -> LogEvent:
        """Log an event (open, close, tx, control, break, config, error, marker, reconnect ...)."""
        with self._lock:
            event = self.log.append(kind, time.time(), data, **fields)
            listeners = list(self.listeners)
        for listener in listeners:
            listener(event, data)
        return event

    # --- pump thread side ---------------------------------------------------------------------

    def _on_data(self, data: bytes, t: float) -> None:
        with self._lock:
            offset = self.ring.end_offset
            self.ring.append(data, t)
            end = offset + len(data)
            self._last_rx_time = t
            event = self.log.append_rx(offset, len(data), t)
            self._served = bool(self._waiters)  # before the listeners: they may look at may_linger
            for listener in self.listeners:  # recorders only enqueue; the pump never waits on a file
                listener(event, data)
            responders = list(self.responders) if self.responders and self.lent_to is None else None
            # Wake the loop only if someone waits and no wake-up is already on its way: a flood
            # nobody is reading costs no loop work at all, and a burst costs one wake-up.
            schedule = self._served and not self._wake_pending
            if schedule:
                self._wake_pending = True
        self.events.wake(end)
        if responders:  # outside the lock: matching scans the chunk
            self._respond(responders, data, offset)
        if schedule:
            self._call_on_loop(self._wake)

    def record_event(self, item: SeenEvent) -> None:
        """A detected event into the log (``event``) and to the listeners, under the lock as rx is (from the
        watch thread), at the newest entry's time: a chunk the pump timed just before may come after it,
        and a capture's times never go back (the event's own time is in it)."""
        with self._lock:
            last = self.log.tail(1)
            t = last[0].t if last else time.time()
            event = self.log.append("event", t, None, label=item.text_line(), event=item.as_dict())
            for listener in self.listeners:
                listener(event, None)

    def wake_waiters(self) -> None:
        """Wake waiting reads from any thread (a detected event may end a ``read(until=...)``)."""
        with self._lock:
            if not self._waiters or self._wake_pending:
                return
            self._wake_pending = True
        self._call_on_loop(self._wake)

    def _respond(self, responders: list[Any], data: bytes, offset: int) -> None:
        """Match, and hand each answer to the writer: the pump never waits on a device's write."""
        end = offset + len(data)
        for r in responders:
            more = r.feed(data, offset)
            while more:  # one answer per occurrence, even several in one chunk
                self.answers.submit(r)
                more = not r.done and r.feed(b"", end)

    def _on_pump_stop(self, error: BaseException | None, generation: int) -> None:
        if error is not None:
            self._call_on_loop(self._port_lost, error, generation)

    def _call_on_loop(self, fn: Any, *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # loop closed during shutdown: nobody is waiting any more
            self.loop.call_soon_threadsafe(fn, *args)

    # --- event loop side ----------------------------------------------------------------------

    def _wake(self) -> None:
        with self._lock:
            self._wake_pending = False
            waiters, self._waiters = self._waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    def reading(self, cursor: str, timeout: float) -> CursorHold:
        """Hold ``cursor`` for one read: reads on one cursor run one at a time, so two concurrent
        readers never get the same bytes twice (nor lose any). Waiting longer than ``timeout`` is
        ``cursor_busy``."""
        return CursorHold(self, cursor, timeout)

    def current_state(self) -> State:
        """The state now (after an await, another task may have changed it)."""
        return self.state

    def snapshot(self) -> Snapshot:
        with self._lock:
            return Snapshot(self.ring.start_offset, self.ring.end_offset, self.state, self._last_rx_time)

    def rx_end(self) -> int:
        """The RX live edge: one past the newest byte received."""
        with self._lock:
            return self.ring.end_offset

    @property
    def thread_lock(self) -> threading.Lock:
        """The lock the pump thread appends under: over the ring, cursors, log, listeners and
        responders. For the port machinery in serial/ (reader, responder, event watch, log view) that
        reads several of them at once; engine/ calls the named operations below instead (an AST
        rule, tests/unit/test_layer_rules.py)."""
        return self._lock

    @property
    def rx_buffer_size(self) -> int:
        """The RX ring's capacity in bytes."""
        return self.ring.capacity

    def rx_status(self) -> RxStatus:
        """The ring's edges, its evictions and every cursor's position, in one consistent view."""
        with self._lock:
            return RxStatus(
                self.ring.start_offset,
                self.ring.end_offset,
                self.ring.dropped_total,
                tuple((c.name, c.offset) for c in self.cursors),
            )

    def cursor_offset(self, name: str) -> int:
        """Where cursor ``name`` stands (a new one starts at the oldest retained byte)."""
        with self._lock:
            return self.cursors.get(name, self.ring.start_offset).offset

    def flush_cursor(self, name: str, end: int) -> int:
        """Move cursor ``name`` to ``end`` (a mark from ``purge_and_mark``), forgetting its framed-read
        state; returns how many bytes it skipped unread."""
        with self._lock:
            cur = self.cursors.get(name, self.ring.start_offset)
            skipped = max(0, end - cur.offset)
            cur.offset = end
            cur.drop_decoder()
        return skipped

    def unread_before(self, name: str, mark: int) -> int:
        """Retained bytes before ``mark`` that cursor ``name`` has not read."""
        with self._lock:
            cur = self.cursors.get(name, self.ring.start_offset)
            return max(0, mark - max(cur.offset, self.ring.start_offset))

    def cursor_screen(self, name: str, cols: int, rows: int) -> TerminalScreen:
        """The terminal screen kept with cursor ``name`` (a new size starts a new screen)."""
        with self._lock:
            cur = self.cursors.get(name, self.ring.start_offset)
            if cur.screen is None or cur.screen.size != (cols, rows):
                cur.screen = TerminalScreen(cols, rows)
            screen: TerminalScreen = cur.screen
        return screen

    def armed_responders(self) -> list[Any]:
        """The respond rules armed now (a copy: the pump may arm or drop one meanwhile)."""
        with self._lock:
            return list(self.responders)

    async def send(
        self,
        data: bytes,
        pace: Pace | None = None,
        timeout_s: float | None = None,
        stall_s: float | None = None,
    ) -> WriteOutcome:
        """Log ``data`` as tx, then write it (bounded, see ``TxSession.write_locked``); the caller
        holds the TX turn (``async with conn.tx.turn(...)``). Logged first, as every write: a fast
        reply is never logged before its command."""
        self.record("tx", data)
        return await self.tx.write_locked(data, pace, timeout_s, stall_s)

    def send_now(self, data: bytes, timeout_s: float | None = None, **fields: Any) -> int:
        """Log, then write from any thread without queueing for the TX turn: a mirror forwarding its
        client's bytes, a responder answering during a transact's read. Blocking; bounded like every
        write (``WriteStopped`` at the deadline)."""
        self.record("tx", data, **fields)
        return self.tx.write_now(data, timeout_s)

    def read_ring(self, offset: int, max_bytes: int | None) -> RingRead:
        with self._lock:
            return self.ring.read(offset, max_bytes)

    def time_at(self, offset: int) -> float | None:
        with self._lock:
            return self.ring.time_at(offset)

    async def purge_and_mark(self) -> int:
        """Drop unread OS input and return the RX live edge, exactly: done on the pump thread
        between two reads, so no byte that arrived before the purge can land after the mark."""

        def purge() -> int:
            self.handle.reset_input()
            with self._lock:
                return self.ring.end_offset

        fut = self._pump.between_reads(purge)
        result: int = await asyncio.wrap_future(fut)
        return result

    async def wait_change(self, timeout: float, seen_end: int | None = None) -> None:
        """Sleep until bytes beyond ``seen_end`` arrive, the state changes, or ``timeout`` passes.

        The check and the registration happen under the pump's lock, so a chunk that lands
        between the caller's look at the ring and this call is never slept through.
        """
        if timeout <= 0:
            return
        fut: asyncio.Future[None] = self.loop.create_future()
        with self._lock:
            if seen_end is not None and self.ring.end_offset != seen_end:
                return
            self._waiters.append(fut)
        self._pump.poke()  # a pump lingering over a trickle reads now
        # A timer rather than a cancel scope: this runs once per wait of every read.
        timer = self.loop.call_later(timeout, _wake_one, fut)
        try:
            await fut
        finally:
            timer.cancel()
            if not fut.done():
                fut.cancel()
            if fut in self._waiters:  # timed out or cancelled, not woken by data: unregister
                with self._lock:
                    if fut in self._waiters:
                        self._waiters.remove(fut)

    async def close(self) -> None:
        """Stop the pump, close the port, wake every waiter. Idempotent."""
        if self.state == "closed":
            return
        was_open = self.state == "open"
        self.state = "closed"
        self.answers.close()
        if self.lend is not None:
            self.lend.cancel()
        if self._reconnect_task is not None:
            self._reconnect_task.cancel()
            self._reconnect_task = None
        if was_open:
            await anyio.to_thread.run_sync(self._pump.stop)
        await anyio.to_thread.run_sync(self.events.stop)  # what the pump delivered is scanned first
        if was_open:
            try:
                await anyio.to_thread.run_sync(self.handle.close)
            except Exception as exc:
                log.info("closing %s: %s", self.port, exc)
        for closer in self.closers:  # before the recording stops: what they log (a mirror client
            try:  # cut off, say) is the capture's too
                await anyio.to_thread.run_sync(closer)
            except Exception as exc:  # a clean-up failure must not keep the port open
                log.info("closing %s: %s", self.id, exc)
        self.record("close")
        await self.stop_recording("closed")
        self._wake()
        self._release()

    def _release(self) -> None:
        """Let go of everything that points back at this connection (mirror, responders, listeners,
        closers): once the manager drops it, reference counting frees it and its ring at once."""
        with self._lock:
            self.listeners.clear()
            self.responders.clear()
        self.closers.clear()
        self.mirror = None
        self.rfc2217 = None
        self._cursor_locks.clear()

    def forget_cursor(self, name: str) -> None:
        """Drop cursor ``name`` and its read lock (the caller it belonged to is gone)."""
        with self._lock:
            self.cursors.remove(name)
        self.events.forget(name)
        lock = self._cursor_locks.get(name)
        if lock is not None and not lock.locked():
            del self._cursor_locks[name]

    def add_listener(self, listener: Listener) -> None:
        with self._lock:
            self.listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        """Detach ``listener`` (from any thread; a dead recorder detaches itself)."""
        with self._lock:
            if listener in self.listeners:
                self.listeners.remove(listener)

    def start_recording(self, recorder: Any) -> None:
        """Attach ``recorder``; what it missed since its start offset is queued first, in the same
        hold of the lock (a chunk arriving meanwhile is either caught up or heard, never both)."""
        with self._lock:
            self.recorder = recorder
            recorder.catch_up()
            self.listeners.append(recorder.on_event)

    async def stop_recording(self, reason: str = "stopped") -> Any:
        """Detach and finish the recorder (if any); returns it for its figures."""
        with self._lock:
            recorder, self.recorder = self.recorder, None
            if recorder is not None and recorder.on_event in self.listeners:
                self.listeners.remove(recorder.on_event)
        if recorder is not None:
            await anyio.to_thread.run_sync(recorder.stop, reason)
        return recorder

    @property
    def pump_alive(self) -> bool:
        return self._pump.alive


def _wake_one(fut: asyncio.Future[None]) -> None:
    """A waiter's timeout: it wakes as if data came (the reader looks and sees why it woke)."""
    if not fut.done():
        fut.set_result(None)


class CursorHold:
    """``async with conn.reading(cursor, timeout)``: the cursor's lock, taken within ``timeout``
    (a class, not a generator: it runs once per read)."""

    __slots__ = ("_conn", "_cursor", "_lock", "_timeout")

    def __init__(self, conn: Connection, cursor: str, timeout: float) -> None:
        self._conn, self._cursor, self._timeout = conn, cursor, timeout
        self._lock = conn._cursor_locks.setdefault(cursor, asyncio.Lock())

    async def __aenter__(self) -> None:
        if not await acquire_within(self._lock, max(self._timeout, 0.05)):
            raise OperationTimeout(
                ErrorCode.CURSOR_BUSY,
                messages.CURSOR_BUSY.format(
                    cursor=self._cursor, id=self._conn.id, ms=int(self._timeout * 1000)
                ),
                connection_id=self._conn.id,
            )

    async def __aexit__(self, *exc: object) -> None:
        self._lock.release()
