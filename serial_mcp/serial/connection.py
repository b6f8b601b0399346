"""Connection: one open port — its pump thread, RX ring, cursors, TX session, lines and lifecycle.

Thread rules: the pump thread only calls ``_on_data`` / ``_on_pump_stop`` (which touch the ring
under ``thread_lock`` and schedule work on the event loop); respond answers are written by the
connection's ``AnswerWriter`` on a thread of its own, never by the pump. Everything else runs on the
loop. Waiters are woken with ``loop.call_soon_threadsafe``; bursts are coalesced into one wake-up.

Its parts: the RX side (``rx``: ring, cursors and their lock, ``serial.rx_view.RxView``), the TX
session (``tx``), the lines (``lines``: DTR/RTS/BREAK, settings, modem lines, the line turn,
``serial.port_controls.PortLines``), the event watch (``events``). The engine uses the named operations
(``rx.status``, ``rx.flush_cursor``, ``send``, ``tx.turn``, ``lines.turn``, ``hold_for`` ...),
never the lock, ring or cursor table, and assigns none of its fields. The lifecycle (loss, reconnect,
lend and take back) is ``serial.port_lifecycle.PortLifecycle``, a base of ``Connection``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, Generic, NamedTuple, Never, TypeVar, cast

import anyio

from serial_mcp.core.connection_options import ConnectionOptions
from serial_mcp.core.eventlog import EventLog, LogEvent
from serial_mcp.core.pace import Pace
from serial_mcp.core.reconnect import ReconnectPolicy
from serial_mcp.core.settings import SerialSettings
from serial_mcp.serial.event_text import SeenEvent
from serial_mcp.serial.event_watch import EventWatch
from serial_mcp.serial.handle import PortHandle
from serial_mcp.serial.port_controls import PortLines
from serial_mcp.serial.port_lifecycle import PortLifecycle
from serial_mcp.serial.port_lifecycle import State as State  # re-exported: connection.State, as before
from serial_mcp.serial.pump import RxPump
from serial_mcp.serial.responder import AnswerWriter
from serial_mcp.serial.rx_view import RxView
from serial_mcp.serial.tx import TxSession, WriteOutcome

log = logging.getLogger(__name__)
T = TypeVar("T")

# A listener sees every event as it happens, with the rx/tx bytes; it must not block (enqueue only).
Listener = Callable[[LogEvent, bytes | None], None]


class Snapshot(NamedTuple):
    """A consistent view of the ring edges and state, taken under the lock (several per call: a
    tuple costs less than half a frozen dataclass to build)."""

    start_offset: int
    end_offset: int
    state: State
    last_rx_time: float | None


class Field(Generic[T]):
    """A field read in public and changed only through a named operation; kept as ``_<name>``."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._private = "_" + name

    def __get__(self, conn: object, kind: type | None = None) -> T:
        return cast(T, self if conn is None else getattr(conn, self._private))  # on the class: itself

    def __set__(self, conn: object, value: Never) -> None:  # mypy and Python refuse an assignment
        raise AttributeError(f"{self._private[1:]} is changed by a named operation")


class Connection(PortLifecycle):
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
        self._settings = settings
        self.options = options or ConnectionOptions()  # default codecs, pacing, bound profile
        self.loop = loop
        self.rx = rx = RxView(rx_buffer_size, connection_id)  # ring, cursors and their lock
        self._lock = rx.lock  # also over the log, listeners and responders (see thread_lock)
        self.ring = rx.ring  # the pump appends to it; serial/'s readers read it under the lock
        self.rx_end, self.read_ring, self.time_at = rx.end, rx.read, rx.time_at
        self.tx = TxSession(handle)
        self.lines = PortLines(handle)  # DTR/RTS/BREAK, settings on the handle, modem lines; the line turn
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
        self._mirror: Any = None  # a serial.mirror.PtyMirror when open(mirror=...)
        self.lend: Any = None  # a serial.lending.Lend while the port is lent (state "released")
        self._rfc2217: Any = None  # a serial.rfc2217_mirror.Rfc2217Mirror when open(mirror="rfc2217")
        self.lent_to: str | None = None  # the RFC 2217 client that writes to the port now (responders held)
        self._owner = "local"  # the caller (engine.access.Caller.key) that opened it
        self._share = "read"  # what other callers may do: "read" | "write"
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
            return conn.recorder is None and conn._mirror is None and conn._rfc2217 is None

        return RxPump(handle, on_data, on_stop, name=f"rx-pump-{self.id}", may_linger=may_linger)

    # --- who holds it and how it is set: read here, changed by the named operations below ---------

    owner = Field[str]()  # the caller (``engine.access.Caller.key``) that holds it
    share = Field[str]()  # what other callers may do: "read" | "write"
    settings = Field[SerialSettings]()  # the serial settings in force
    mirror = Field[Any]()  # its PTY mirror (``serial.mirror.PtyMirror``), or None
    rfc2217 = Field[Any]()  # its RFC 2217 mirror (``serial.rfc2217_mirror.Rfc2217Mirror``), or None

    def hold_for(self, owner: str, share: str | None = None) -> None:
        """``owner`` holds the port now (``NOBODY``: handed on); ``share``, if given: what others may do."""
        self._owner = owner
        if share is not None:
            self._share = share

    def bind_profile(self, name: str | None) -> None:
        """The device profile this connection is bound to now (its settings are written through)."""
        self.options.profile = name

    def use_settings(self, settings: SerialSettings) -> None:
        """The port was reconfigured to ``settings`` (applied already): remember and log them."""
        self._settings = settings
        self.record("config", settings=settings.as_dict())

    def attach_mirror(self, mirror: Any, rfc2217: bool = False) -> None:
        """Serve the port through ``mirror`` (a PTY, or RFC 2217 when ``rfc2217``), closed with the port."""
        if rfc2217:
            self._rfc2217 = mirror
        else:
            self._mirror = mirror
        self.closers.append(mirror.close)

    def detach_rfc2217(self) -> Any:
        """Stop serving over RFC 2217: the mirror (None if there was none), no longer closed with the port."""
        mirror, self._rfc2217 = self._rfc2217, None
        if mirror is not None and mirror.close in self.closers:
            self.closers.remove(mirror.close)
        return mirror

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
        self.events.room_for(self.ring.end_offset, len(data))  # the pump is the ring's only writer
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
        if responders:  # outside the lock: matching scans the chunk
            self._respond(responders, data, offset)
        if schedule:
            self._call_on_loop(self._wake)
        self.events.wake(end)  # last: in a flood the pump scans here, after a waiting read was woken

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

    def current_state(self) -> State:
        """The state now (after an await, another task may have changed it)."""
        return self.state

    def snapshot(self) -> Snapshot:
        with self._lock:
            return Snapshot(self.ring.start_offset, self.ring.end_offset, self.state, self._last_rx_time)

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
        self._mirror = self._rfc2217 = None
        self.rx.forget_read_locks()

    def forget_cursor(self, name: str) -> None:
        """Drop cursor ``name`` and its read lock (the caller it belonged to is gone)."""
        self.rx.forget(name)
        self.events.forget(name)

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
