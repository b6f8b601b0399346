"""The text of detected events: the line each event gets (``⚠ crash at offset N: … — function at file:line ←
caller``), the order a result lists them in (a boot loop, then by severity) and what they are attributed to.

Split from :mod:`serial_mcp.serial.event_watch` (which finds and keeps the events) so that what an agent reads
is in one place; see docs/events.md, "Results".
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from serial_mcp import messages

if TYPE_CHECKING:
    from serial_mcp.core.eventlog import LogEvent
    from serial_mcp.core.events import Event
    from serial_mcp.core.ring import RingRead, RxRing

MAX_TEXT_LINES: Final = 5  # lines at the head of a result's text (every boot loop besides)
MAX_WHERE_FRAMES: Final = 3  # frames of the decoded chain an event's text line names (then how many more)

Frames = tuple[tuple[int, tuple[str, ...]], ...]  # (address, its frames innermost first), as LoadedElf.decode


class Watched(Protocol):
    """What the event watch reads of its connection (``serial.connection.Connection``, which owns it)."""

    id: str
    ring: RxRing
    lent_to: str | None  # the RFC 2217 client that drives the port now

    @property
    def thread_lock(self) -> threading.Lock: ...

    def add_listener(self, listener: Callable[[LogEvent, bytes | None], None]) -> None: ...

    def read_ring(self, offset: int, max_bytes: int | None) -> RingRead: ...

    def record_event(self, item: SeenEvent) -> None: ...

    def wake_waiters(self) -> None: ...


@dataclass(frozen=True, slots=True)
class SeenEvent:
    """A detected event with its number on the connection and its addresses decoded (if an ELF is set)."""

    seq: int
    event: Event
    frames: Frames = ()  # (address, its frames innermost first)

    @property
    def where(self) -> str | None:
        """The innermost frame of the first decoded address (the program counter's when it has one), or
        where a Python traceback says it was raised."""
        return where_of(self.frames) or self.event.location()

    def as_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, **event_dict(self.event, self.frames)}

    def compact(self) -> dict[str, Any]:
        """What a read result lists: enough to act on; ``get_log`` / ``events()`` have the rest."""
        e = self.event
        out: dict[str, Any] = {"seq": self.seq, "kind": e.kind, "severity": e.severity, "offset": e.offset}
        out["text"] = e.line
        for name in ("reason", "reset_reason"):
            value = getattr(e, name)
            if value is not None:
                out[name] = value
        where = self.where
        if where is not None:
            out["where"] = where
        return out

    def text_line(self) -> str:
        e = self.event
        mark = messages.EVENT_MARK_ALERT if e.severity != "info" else messages.EVENT_MARK_INFO
        if e.kind == "exception":
            mark = messages.EVENT_MARK_EXCEPTION
        where = where_suffix(self.frames)  # the decoded chain; else where a traceback says it was raised
        if not where and (location := e.location()):
            where = messages.EVENT_LINE_WHERE.format(where=location)
        return messages.EVENT_LINE.format(mark=mark, summary=e.summary()[:200], where=where)


def line_change_cause(conn: Watched | None, fields: Any) -> str:
    """What a DTR/RTS change that may reset the board is reported as: whose it was."""
    if fields.get("source") == "rfc2217":
        client = conn.lent_to if conn is not None and conn.lent_to else messages.EVENT_RESET_MIRROR_CLIENT
        return messages.EVENT_RESET_LINES_BY.format(who=client)
    return messages.EVENT_RESET_LINES


def lend_cause(pids: Iterable[int] | None) -> str:
    """What the boots seen right after a lend are attributed to: ``lend to pid 4242``."""
    to = messages.EVENT_RESET_LEND_TO.format(pids=", ".join(map(str, pids))) if pids else ""
    return messages.EVENT_RESET_LEND.format(to=to)


def where_of(frames: Frames) -> str | None:
    """The innermost frame of the first decoded address (the program counter's when it has one)."""
    for _, found in frames:
        if found:
            return found[0]
    return None


def event_dict(event: Event, frames: Frames = ()) -> dict[str, Any]:
    """An event as JSON with its decoded ``frames`` (``{"0x…": [frame, …]}``) when it has any: what the
    event log, ``events()`` and ``decode --events --format jsonl`` give."""
    out = event.as_dict()
    if frames:
        out["frames"] = {f"0x{a:08x}": list(f) for a, f in frames}
    return out


def where_suffix(frames: Frames) -> str:
    """`` — function at file:line ← caller at file:line ← …`` for a text line: the decoded chain, innermost
    first (the PC's frames, then each caller's), ``MAX_WHERE_FRAMES`` of it and how many more; nothing when
    no address was decoded."""
    chain = [f for _, found in frames for f in found]
    chain = [f for i, f in enumerate(chain) if i == 0 or f != chain[i - 1]]
    if not chain:
        return ""
    where = messages.EVENT_WHERE_CALLER.join(chain[:MAX_WHERE_FRAMES])
    if len(chain) > MAX_WHERE_FRAMES:
        where += messages.EVENT_WHERE_MORE.format(n=len(chain) - MAX_WHERE_FRAMES)
    return messages.EVENT_LINE_WHERE.format(where=where)


#: the order a result's text lists its events in: a boot loop (the answer to "how often does it reboot?"),
#: then by severity; the same rank keeps arrival order
_SEVERITY_RANK: Final = {"critical": 1, "error": 2, "warning": 3, "info": 4}


def rank(kind: object, severity: object) -> int:
    """Where an event of ``kind`` and ``severity`` goes in a text: lower first."""
    return 0 if kind == "boot_loop" else _SEVERITY_RANK.get(str(severity), 5)


def text_lines(events: Iterable[dict[str, Any]] | None) -> str:
    """The lines a result's text starts with: one per listed event (stages left out), most important first
    (boot loops, then crashes, then resets and boots), at most ``MAX_TEXT_LINES`` but every boot loop, then
    how many more there are (those left out of the list included)."""
    if not events:
        return ""
    listed = list(events)
    left_out = sum(int(e.get("earlier", 0)) for e in listed)
    shown = [e for e in listed if e.get("kind") not in ("stage", "not_scanned") and "line" in e]
    shown.sort(key=lambda e: rank(e.get("kind"), e.get("severity")))
    keep = [e for i, e in enumerate(shown) if i < MAX_TEXT_LINES or e.get("kind") == "boot_loop"]
    lines = [str(e["line"]) for e in keep]
    lines += [str(e["line"]) for e in listed if e.get("kind") == "not_scanned"]
    more = len(shown) - len(keep) + left_out
    if more > 0:
        lines.append(messages.EVENT_LINES_MORE.format(n=more))
    return "".join(line + "\n" for line in lines)


def listed(new: list[SeenEvent], most: int) -> list[dict[str, Any]]:
    """Events as a result lists them, compact, each with its text ``line``: past ``most``, the most important
    (boot loops and crashes before boots; the newest of a rank), the first saying how many were left out."""
    if len(new) > most:
        by_rank = sorted(new, key=lambda e: (rank(e.event.kind, e.event.severity), -e.seq))
        picked = {e.seq for e in by_rank[:most]}
        new_listed = [e for e in new if e.seq in picked]
    else:
        new_listed = new
    out = [{**e.compact(), "line": e.text_line()} for e in new_listed]
    if len(new) > most:
        out[0]["earlier"] = len(new) - most  # not listed here: get_log has them
    return out


class NotScanned:
    """The bytes the watch could not scan: counted, and the latest ``kept`` ranges kept to be named to each
    caller once (``take``). Thread-safe: the pump or the watch thread adds, callers take."""

    def __init__(self, kept: int) -> None:
        self._lock = threading.Lock()
        self.bytes = 0
        self.skips = 0
        self._ranges: deque[tuple[int, int, int]] = deque(maxlen=kept)  # (skip number, first, end)
        self._told: dict[str, int] = {}  # the last skip number each caller was told of

    def add(self, lo: int, hi: int) -> None:
        with self._lock:
            self.bytes += hi - lo
            self.skips += 1
            last = self._ranges[-1] if self._ranges else None
            if last is not None and last[2] == lo:  # right after the last one: one range
                self._ranges[-1] = (self.skips, last[1], hi)
            else:
                self._ranges.append((self.skips, lo, hi))

    def last(self) -> tuple[int, int] | None:
        with self._lock:
            return self._ranges[-1][1:] if self._ranges else None

    def take(self, key: str, upto: int) -> list[dict[str, Any]]:
        """The ranges before ``upto`` caller ``key`` was not told of, as result items; told from now on."""
        with self._lock:
            new = [r for r in self._ranges if r[0] > self._told.get(key, 0) and r[1] < upto]
            if new:
                self._told[key] = new[-1][0]
        line = messages.EVENTS_NOT_SCANNED_RANGE
        return [
            {"kind": "not_scanned", "offset": lo, "end": hi, "line": line.format(lo=lo, hi=hi, n=hi - lo)}
            for _, lo, hi in new
        ]

    def forget(self, key: str) -> None:
        with self._lock:
            self._told.pop(key, None)
