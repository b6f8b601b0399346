"""Respond-on-match: the engine answers a pattern in the RX stream at once, without an agent round trip.

Typical use: press a key when a bootloader prints ``Hit any key to stop autoboot``, or a space on
a ``--More--`` pager. The responder runs on the pump thread right after each chunk is stored
(outside the ring's lock), so the answer goes out within the time of one write; the pattern is
found across chunk boundaries. Every response is logged as a tx event with ``respond: true``.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Protocol

from serial_mcp import messages
from serial_mcp.core.encoding import decode_input
from serial_mcp.core.match import Matcher
from serial_mcp.core.unknown_keys import reject_unknown_keys
from serial_mcp.errors import InvalidArgument

log = logging.getLogger(__name__)

RESPOND_KEYS = ("on", "send", "encoding", "times")
MAX_TIMES = 100
_REGEX_WINDOW = 4096  # bytes of history a regex/glob pattern is searched in
PRIME_WINDOW = 64 * 1024  # at most this much unread history is shown to a rule being armed (under the lock)


@dataclass
class Responder:
    """One ``respond`` rule while it is armed: what to look for, what to send, how often."""

    matcher: Matcher
    send: bytes
    times: int = 1
    sent: int = 0
    standing: bool = False  # armed on the connection (open/configure), not by one call
    on: str = ""  # the pattern as given, for status
    events: list[dict[str, Any]] = field(default_factory=list)
    _window: bytearray = field(default_factory=bytearray)
    _clean: int = 0  # window[:_clean] is known to hold no complete match
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def from_spec(cls, spec: Any) -> Responder:
        if not isinstance(spec, dict):
            raise InvalidArgument(messages.RESPOND_BAD)
        reject_unknown_keys(spec, RESPOND_KEYS, "respond")
        if "on" not in spec or "send" not in spec or not isinstance(spec["send"], str):
            raise InvalidArgument(messages.RESPOND_BAD)
        times = spec.get("times", 1)
        if isinstance(times, bool) or not isinstance(times, int) or not 1 <= times <= MAX_TIMES:
            raise InvalidArgument(messages.RESPOND_TIMES.format(max=MAX_TIMES))
        send = decode_input(spec["send"], str(spec.get("encoding", "utf8")), field="respond.send")
        if not send:
            raise InvalidArgument(messages.RESPOND_BAD)
        on = spec["on"] if isinstance(spec["on"], str) else str(spec["on"].get("pattern", ""))
        return cls(Matcher.from_spec(spec["on"]), send, times, on=on[:80])

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
        return {"on": self.on, "sent": self.sent, "times": self.times, "standing": self.standing}


class _Armable(Protocol):
    lock: threading.Lock
    responders: list[Any]
    ring: Any
    tx: Any

    def record(self, kind: str, data: bytes | None = None, **fields: Any) -> Any: ...


def prime(conn: _Armable, responder: Responder, start: int | None) -> int:
    """Arm ``responder`` on ``conn``, first showing it what already arrived from ``start`` (an
    absolute offset; None = only new bytes). Done under the connection's lock, so every byte is
    seen exactly once: the history here, later chunks by the pump. Returns how many answers the
    history already calls for (send them with ``answer``)."""
    hits = 0
    with conn.lock:
        if start is not None:
            end = conn.ring.end_offset  # only the recent past: a prompt still waiting, not old news
            history = conn.ring.read(max(start, conn.ring.start_offset, end - PRIME_WINDOW), None)
            if history.data and responder.feed(history.data, history.from_offset):
                hits += 1
                while not responder.done and responder.feed(b"", history.next_offset):
                    hits += 1
        conn.responders.append(responder)
    return hits


def answer(conn: _Armable, responder: Responder) -> None:
    """Send the response now (blocking; from a worker thread) and log it."""
    try:
        conn.tx.write_now(responder.send)
    except OSError as exc:  # the pump sees the port die on its next read
        log.info("respond failed: %s", exc)
        return
    conn.record("tx", responder.send, respond=True)


def disarm(conn: _Armable, responder: Responder) -> None:
    with conn.lock:
        if responder in conn.responders:
            conn.responders.remove(responder)
