"""Respond-on-match: the engine answers a pattern in the RX stream at once, without an agent round trip.

Typical use: press a key when a bootloader prints ``Hit any key to stop autoboot``, or a space on
a ``--More--`` pager. The responder looks at each chunk on the pump thread right after it is stored
(outside the ring's lock); the pattern is found across chunk boundaries. Every response is logged
as a tx event with ``respond: true``.

The answer itself goes to the connection's ``AnswerWriter``, never written on the pump: a device
that does not take it (a full buffer, XOFF) must not stop the pump reading, or its kernel buffer
overflows meanwhile. The writer sends answers in order, each within a short bound (``ANSWER_BOUND_S``
plus its wire time); one it cannot write in time, or one that finds ``ANSWER_QUEUE`` answers already
waiting, is dropped, logged as an ``error`` event (``respond failed``, ``respond: true``, with its
``reason``) and counted in the rule's status (``failed``).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import threading
import weakref
from collections import deque
from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol, Required

from pydantic import Field, Strict
from typing_extensions import TypedDict  # pydantic validates it on Python 3.11 too

from serial_mcp import messages
from serial_mcp.core.encoding import decode_input
from serial_mcp.core.match import Matcher
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import InvalidArgument
from serial_mcp.serial.tx import BITS_PER_CHAR, WriteStopped

log = logging.getLogger(__name__)

MAX_TIMES = 100
_REGEX_WINDOW = 4096  # bytes of history a regex/glob pattern is searched in
PRIME_WINDOW = 64 * 1024  # at most this much unread history is shown to a rule being armed (under the lock)
ANSWER_QUEUE = 16  # answers waiting behind the one being written; one more is dropped (respond failed)
ANSWER_BOUND_S = 1.0  # plus its wire time: an answer the device has not taken by then is dropped


class RuleSpec(TypedDict, total=False):
    """A respond rule: when ``on`` (a match) arrives, send ``send`` (``times`` times at most)."""

    on: Required[str | dict[str, object]]
    send: Required[str]
    encoding: str  # checked where ``send`` is decoded, with its own text
    times: Annotated[int, Strict(), Field(ge=1, le=MAX_TIMES)]


@dataclass
class Responder:
    """One ``respond`` rule while it is armed: what to look for, what to send, how often."""

    matcher: Matcher
    send: bytes
    times: int = 1
    sent: int = 0
    failed: int = 0  # answers dropped (the device did not take them in time, or too many waited)
    standing: bool = False  # armed on the connection (open/configure), not by one call
    on: str = ""  # the pattern as given, for status
    events: list[dict[str, Any]] = field(default_factory=list)
    _window: bytearray = field(default_factory=bytearray)
    _clean: int = 0  # window[:_clean] is known to hold no complete match
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def from_spec(cls, spec: RuleSpec) -> Responder:
        """The responder of a rule its option's type has checked (``RULE_CHECK``, as the options
        are built); what is left is to decode ``send`` and compile ``on``, each with its own text."""
        send = decode_input(spec["send"], spec.get("encoding", "utf8"), field="respond.send")
        if not send:
            raise InvalidArgument(messages.RESPOND_BAD)
        on = spec["on"] if isinstance(spec["on"], str) else str(spec["on"].get("pattern", ""))
        return cls(Matcher.from_spec(spec["on"]), send, spec.get("times", 1), on=on[:80])

    def feed(self, data: bytes, offset: int) -> bool:
        """Look at new bytes starting at stream offset ``offset`` (``b""`` looks again at what is
        left after a match); True when it is time to send. Two occurrences in one chunk answer twice
        (call again with ``b""``)."""
        with self._lock:
            if self.sent >= self.times:
                return False
            self._window += data
            window_start = offset + len(data) - len(self._window)
            span = self.matcher.find(bytes(self._window), self._clean)
            if span is None:
                keep = len(self.matcher.pattern) - 1 if self.matcher.mode == "literal" else _REGEX_WINDOW
                if len(self._window) > keep:
                    del self._window[: len(self._window) - keep]
                self._clean = len(self._window)
                return False
            del self._window[: span.end]  # the next response needs a new occurrence
            self._clean = 0  # what is left after the match was not searched on its own yet
            self.sent += 1
            self.events.append({"match_offset": window_start + span.start})
            return True

    @property
    def done(self) -> bool:
        return self.sent >= self.times

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"on": self.on, "sent": self.sent, "times": self.times}
        out["standing"] = self.standing
        if self.failed:
            out["failed"] = self.failed
        return out

    def note_failed(self) -> None:
        with self._lock:
            self.failed += 1


class _Answering(Protocol):
    """What the writer needs of a connection."""

    id: str

    @property
    def settings(self) -> SerialSettings: ...

    def record(self, kind: str, data: bytes | None = None, **fields: Any) -> Any: ...

    def send_now(self, data: bytes, timeout_s: float | None = None, **fields: Any) -> int: ...


class _Armable(_Answering, Protocol):
    @property
    def thread_lock(self) -> threading.Lock: ...

    responders: list[Any]
    ring: Any
    answers: AnswerWriter


Done = concurrent.futures.Future[bool]  # True once the answer went out whole


class AnswerWriter:
    """Writes one connection's respond answers in order, off the pump thread, each within a short
    bound. ``submit`` never blocks: it queues (at most ``ANSWER_QUEUE`` waiting) and starts a
    writer thread if none runs; the thread ends when the queue is empty, so an idle connection
    costs no thread."""

    def __init__(self, conn: _Answering) -> None:
        self._conn = weakref.ref(conn)  # the connection owns the writer: no cycle to collect
        self._queue: deque[tuple[Responder, Done | None]] = deque()
        self._lock = threading.Lock()
        self._running = False
        self._closed = False
        self.failed = 0  # answers dropped over the connection's life

    def submit(self, responder: Responder, done: Done | None = None) -> None:
        """Queue ``responder``'s answer (from the pump or any thread); ``done`` gets the outcome."""
        start = False
        with self._lock:
            if self._closed:
                waiting = -1
            elif len(self._queue) >= ANSWER_QUEUE:
                waiting = len(self._queue)
            else:
                self._queue.append((responder, done))
                start, self._running = not self._running, True
                waiting = 0
        if waiting:
            if waiting > 0:
                self._dropped(responder, "queue_full", messages.RESPOND_WHY_QUEUE.format(n=waiting), 0)
            _settle(done, False)
        elif start:
            conn = self._conn()
            name = f"respond-{conn.id}" if conn is not None else "respond"
            threading.Thread(target=self._run, name=name, daemon=True).start()

    def close(self) -> None:
        """Drop what still waits (the port is closing); a write in progress ends with the port."""
        with self._lock:
            self._closed = True
            pending = list(self._queue)
            self._queue.clear()
        for _, done in pending:
            _settle(done, False)

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._queue:
                    self._running = False
                    return
                responder, done = self._queue.popleft()
            ok = False
            try:
                ok = self._write(responder)
            except Exception:  # never let the writer die with answers queued behind it
                log.exception("respond writer")
            _settle(done, ok)

    def _write(self, responder: Responder) -> bool:
        conn = self._conn()
        if conn is None:
            return False
        data = responder.send
        bound = ANSWER_BOUND_S + len(data) * BITS_PER_CHAR / max(1, conn.settings.baud_rate)
        try:
            conn.send_now(data, bound, respond=True)  # logged, then written: a reply never precedes it
        except WriteStopped as stopped:  # a TimeoutError: before OSError
            if stopped.reason != "closed":
                why = messages.RESPOND_WHY_TIMEOUT.format(written=stopped.written, ms=round(bound * 1000))
                self._dropped(responder, stopped.reason, why, stopped.written)
            return False
        except OSError as exc:  # the pump sees the port die on its next read
            self._dropped(responder, "io_error", messages.RESPOND_WHY_IO.format(error=exc), 0)
            return False
        return True

    def _dropped(self, responder: Responder, reason: str, why: str, written: int) -> None:
        conn = self._conn()
        if conn is None or self._closed:
            return
        responder.note_failed()
        with self._lock:
            self.failed += 1
            total = self.failed
        text = messages.RESPOND_FAILED.format(on=responder.on, n=len(responder.send), why=why)
        if total & (total - 1) == 0:  # the 1st, 2nd, 4th, 8th ...: a flood of drops is not a flood of logs
            log.info("connection %s: %s (%d dropped so far)", conn.id, text, total)
        n = len(responder.send)
        conn.record("error", message=text, respond=True, reason=reason, bytes=n, bytes_written=written)


def _settle(done: Done | None, ok: bool) -> None:
    if done is not None:
        with contextlib.suppress(concurrent.futures.InvalidStateError):  # its waiter gave up (cancelled)
            done.set_result(ok)


def prime(conn: _Armable, responder: Responder, start: int | None) -> int:
    """Arm ``responder`` on ``conn``, first showing it what already arrived from ``start`` (an
    absolute offset; None = only new bytes). Done under the connection's lock, so every byte is
    seen exactly once: the history here, later chunks by the pump. Returns how many answers the
    history already calls for (send them with ``answer``)."""
    hits = 0
    with conn.thread_lock:
        if start is not None:
            end = conn.ring.end_offset  # only the recent past: a prompt still waiting, not old news
            history = conn.ring.read(max(start, conn.ring.start_offset, end - PRIME_WINDOW), None)
            if history.data and responder.feed(history.data, history.from_offset):
                hits += 1
                while not responder.done and responder.feed(b"", history.next_offset):
                    hits += 1
        conn.responders.append(responder)
    return hits


def answer(conn: _Armable, responder: Responder) -> Done:
    """Queue the response on the connection's writer; the future says whether it went out."""
    done: Done = concurrent.futures.Future()
    conn.answers.submit(responder, done)
    return done


def disarm(conn: _Armable, responder: Responder) -> None:
    with conn.thread_lock:
        if responder in conn.responders:
            conn.responders.remove(responder)
