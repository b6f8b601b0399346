"""EventLog: what happened on a connection, in order — open/close, rx, tx, lines, BREAK, config, errors.

TX payloads are kept in the log (there is no other copy of them). RX events refer to the ring by
offset and length instead of copying the bytes, so RX data lives in exactly one buffer; when the
ring has dropped an event's bytes, readers of the log see that as lost. The log is bounded by an
event count and a byte budget for what it stores; evicted events are counted, never silently gone.
Not thread-safe on its own: the connection holds its lock around every call.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

DEFAULT_BUDGET = 1024 * 1024
DEFAULT_MAX_EVENTS = 20_000
_EVENT_OVERHEAD = 64  # rough bytes per event beyond its payload, for the budget
#: the types of entry a connection's log holds (``get_log(kinds=...)`` takes these and the event kinds)
LOG_TYPES: tuple[str, ...] = (
    "open", "close", "rx", "tx", "event", "config", "control", "break", "error", "marker", "moved",
    "start", "stop", "reconnect", "reclaim", "released", "release", "touch_1200",
)  # fmt: skip
# Every rx event shares this one read-only mapping: a dict of its own would be a quarter of the
# event's memory (64 of ~250 bytes), and a busy port keeps ~16 000 of them.
NO_FIELDS: Mapping[str, Any] = MappingProxyType({})


@dataclass(slots=True)
class LogEvent:
    """One event. ``t`` is wall-clock seconds; rx events carry ``offset``/``length`` into the ring."""

    seq: int
    t: float
    type: str
    fields: Mapping[str, Any] = field(default_factory=lambda: NO_FIELDS)
    data: bytes | None = None  # tx payload
    offset: int | None = None  # rx: absolute offset of the first byte
    length: int | None = None  # rx: number of bytes

    @property
    def cost(self) -> int:
        return _EVENT_OVERHEAD + (len(self.data) if self.data else 0)


class EventLog:
    """Bounded, ordered event history of one connection."""

    def __init__(self, budget_bytes: int = DEFAULT_BUDGET, max_events: int = DEFAULT_MAX_EVENTS) -> None:
        self.budget_bytes = budget_bytes
        self.max_events = max_events
        self._events: deque[LogEvent] = deque()
        self._bytes = 0
        self._seq = 0
        self.evicted_events = 0
        self.evicted_bytes = 0  # tx payload bytes evicted with their events

    def __len__(self) -> int:
        return len(self._events)

    @property
    def next_seq(self) -> int:
        return self._seq + 1

    def append(self, kind: str, t: float, data: bytes | None = None, **fields: Any) -> LogEvent:
        self._seq += 1
        event = LogEvent(self._seq, t, kind, fields, data)
        self._push(event)
        return event

    def append_rx(self, offset: int, length: int, t: float) -> LogEvent:
        """A pump chunk; consecutive chunks are not merged (chunk timing is information)."""
        self._seq += 1
        event = LogEvent(self._seq, t, "rx", NO_FIELDS, None, offset, length)
        self._push(event)
        return event

    def _push(self, event: LogEvent) -> None:
        self._events.append(event)
        self._bytes += event.cost
        while self._events and (self._bytes > self.budget_bytes or len(self._events) > self.max_events):
            old = self._events.popleft()
            self._bytes -= old.cost
            self.evicted_events += 1
            self.evicted_bytes += len(old.data) if old.data else 0

    def since(
        self, seq: int = 0, limit: int | None = None, keep: Callable[[LogEvent], bool] | None = None
    ) -> list[LogEvent]:
        """Events after ``seq`` (those ``keep`` keeps), oldest first, at most ``limit``."""
        out: list[LogEvent] = []
        for event in self._events:
            if event.seq > seq and (keep is None or keep(event)):
                out.append(event)
                if limit is not None and len(out) >= limit:
                    break
        return out

    def tail(self, limit: int, keep: Callable[[LogEvent], bool] | None = None) -> list[LogEvent]:
        """The newest ``limit`` events (of those ``keep`` keeps), oldest first."""
        if keep is None:
            n = len(self._events)
            return [self._events[i] for i in range(max(0, n - limit), n)]
        out: list[LogEvent] = []
        for event in reversed(self._events):
            if len(out) >= limit:
                break
            if keep(event):
                out.append(event)
        out.reverse()
        return out

    def first_seq(self) -> int | None:
        return self._events[0].seq if self._events else None

    def clear(self) -> int:
        """Drop every event (sequence numbers keep increasing); returns how many were dropped."""
        n = len(self._events)
        self._events.clear()
        self._bytes = 0
        return n
