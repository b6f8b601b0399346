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
from typing import Any

from serial_mcp import messages
from serial_mcp.core.encoding import decode_input
from serial_mcp.core.match import Matcher
from serial_mcp.errors import InvalidArgument

log = logging.getLogger(__name__)

RESPOND_KEYS = ("on", "send", "encoding", "times")
MAX_TIMES = 100
_REGEX_WINDOW = 4096  # bytes of history a regex/glob pattern is searched in


@dataclass
class Responder:
    """One ``respond`` rule while it is armed: what to look for, what to send, how often."""

    matcher: Matcher
    send: bytes
    times: int = 1
    sent: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)
    _window: bytearray = field(default_factory=bytearray)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def from_spec(cls, spec: Any) -> Responder:
        if not isinstance(spec, dict):
            raise InvalidArgument(messages.RESPOND_BAD)
        unknown = sorted(set(spec) - set(RESPOND_KEYS))
        if unknown:
            raise InvalidArgument(
                messages.RESPOND_UNKNOWN_KEY.format(key=unknown[0], allowed=", ".join(RESPOND_KEYS))
            )
        if "on" not in spec or "send" not in spec or not isinstance(spec["send"], str):
            raise InvalidArgument(messages.RESPOND_BAD)
        times = spec.get("times", 1)
        if isinstance(times, bool) or not isinstance(times, int) or not 1 <= times <= MAX_TIMES:
            raise InvalidArgument(messages.RESPOND_TIMES.format(max=MAX_TIMES))
        send = decode_input(spec["send"], str(spec.get("encoding", "utf8")), field="respond.send")
        if not send:
            raise InvalidArgument(messages.RESPOND_BAD)
        return cls(Matcher.from_spec(spec["on"]), send, times)

    def feed(self, data: bytes, offset: int) -> bool:
        """Look at a new chunk (starting at ``offset``); True when it is time to send."""
        with self._lock:
            if self.sent >= self.times:
                return False
            searched = len(self._window)
            self._window += data
            span = self.matcher.find(bytes(self._window), searched)
            if span is None:
                keep = len(self.matcher.pattern) - 1 if self.matcher.mode == "literal" else _REGEX_WINDOW
                if len(self._window) > keep:
                    del self._window[: len(self._window) - keep]
                return False
            del self._window[: span.end]  # the next response needs a new occurrence
            self.sent += 1
            self.events.append({"match_offset": offset - searched + span.start})
            return True

    @property
    def done(self) -> bool:
        return self.sent >= self.times
