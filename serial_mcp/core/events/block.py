"""The detector's working parts: a signature row with its patterns compiled (:class:`Row`) and an event being
assembled over several lines (:class:`Block`), with the rules that turn named regex groups into event fields.
Internal to :mod:`serial_mcp.core.events`.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Final

from serial_mcp.core.ansi import strip_ansi
from serial_mcp.core.events.model import Event, Kind, Severity, Signature

MAX_FRAMES: Final = 64  # backtrace addresses and trace lines kept per event
MAX_TEXT: Final = 240  # characters of the summary line and of each detail value
MAX_DETAIL: Final = 16  # detail fields per event

_PAIR: Final = re.compile(r"0x([0-9a-fA-F]+):0x[0-9a-fA-F]+")
_RANK: Final[dict[str, int]] = {"info": 0, "warning": 1, "error": 2, "critical": 3}


_LITERAL: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 :_-/=<>!,'\"")


def _needle(pattern: str) -> str:
    """The literal text a pattern starts with (after ``^`` or ``\\b``), which any match must contain: a rule
    is only run on lines holding it. Empty when the pattern does not start with two or more literal chars."""
    i = 0
    while pattern.startswith(("^", "\\b"), i):
        i += 1 if pattern[i] == "^" else 2
    j = i
    while j < len(pattern) and pattern[j] in _LITERAL:
        j += 1
    if j < len(pattern) and pattern[j] in "?*{":
        j -= 1  # the last char is optional or repeated
    return pattern[i:j] if j - i >= 2 else ""


class Row:
    """A signature with its patterns compiled."""

    __slots__ = (
        "cont",
        "end",
        "head",
        "merges",
        "merges_after",
        "mild",
        "name",
        "quiet",
        "raw",
        "rules",
        "sig",
    )

    def __init__(self, sig: Signature, raw_head: Any = None) -> None:
        self.sig = sig
        self.name = sig.name
        self.raw = raw_head  # a user's RE2 pattern, run on the raw line bytes instead of ``head``
        self.head = re.compile(sig.head)
        self.rules = tuple((_needle(r), re.compile(r)) for r in sig.rules)
        self.end = re.compile(sig.end) if sig.end else None
        self.cont = re.compile(sig.cont) if sig.cont else None
        self.quiet = (re.compile(sig.quiet[0]), re.compile(sig.quiet[1])) if sig.quiet else None
        self.mild = re.compile(sig.mild) if sig.mild else None
        self.merges = frozenset(sig.merges)
        self.merges_after = frozenset(sig.merges_after)


class Block:
    """An event being assembled: a dump or a ROM banner over several lines, or a crash awaiting its reset."""

    __slots__ = (
        "backtrace",
        "crash",
        "crash_offset",
        "detail",
        "end",
        "floor",
        "grace",
        "kind",
        "last_t",
        "line",
        "lines",
        "offset",
        "pc",
        "quiet",
        "reason",
        "row",
        "t",
        "trace",
    )

    def __init__(self, row: Row, kind: Kind, offset: int, end: int, t: float, line: str) -> None:
        self.row = row
        self.kind = kind
        self.offset = offset
        self.end = end
        self.t = t
        self.last_t = t
        self.line = line
        self.reason: str | None = None
        self.pc: int | None = None
        self.backtrace: list[int] = []
        self.trace: list[str] = []
        self.detail: dict[str, str] = {}
        self.lines = 0  # counted lines after the head
        self.quiet = 0  # >0: inside a quiet section (core dump), lines seen there
        self.grace = 0  # lines seen while waiting for a reset
        self.crash: Block | None = None  # a boot block: the crash it is the reset of
        self.crash_offset: int | None = None
        self.floor: Severity = "info"  # the highest severity of a merged head

    def take(self, m: re.Match[str] | None, merged: Row | None = None) -> None:
        """Read a match's named groups into the fields (see the signatures module for their meaning); the
        head of a ``merged`` row raises the severity to its own, and a reason it cannot give (one is set)
        is kept in the detail under its row's name."""
        if merged is not None and merged is not self.row and _RANK[merged.sig.severity] > _RANK[self.floor]:
            self.floor = merged.sig.severity
        if m is None:
            return
        for key, value in m.groupdict().items():
            if value is None:
                continue
            name = key
            if name == "reason":
                if self.reason is None:
                    self.reason = value.strip()[:MAX_TEXT]
                elif merged is not None and merged is not self.row and merged.name not in self.detail:
                    self.detail[merged.name] = value.strip()[:MAX_TEXT]
            elif name == "pc":
                if self.pc is None:
                    self.pc = int(value, 16)
            elif name == "bt":
                if not self.backtrace:
                    self.backtrace = [int(a, 16) for a in _PAIR.findall(value)[:MAX_FRAMES]]
            elif name == "addr":
                if len(self.backtrace) < MAX_FRAMES:
                    self.backtrace.append(int(value, 16))
            elif name == "frame":
                if len(self.trace) < MAX_FRAMES:
                    self.trace.append(value.strip()[:MAX_TEXT])
            elif name not in self.detail and len(self.detail) < MAX_DETAIL:
                self.detail[name] = value.strip()[:MAX_TEXT]

    def severity(self) -> Severity:
        sig = self.row.sig
        mild = self.row.mild
        if mild is not None and self.reason is not None and mild.search(self.reason):
            return "warning"
        return sig.severity if _RANK[sig.severity] >= _RANK[self.floor] else self.floor

    def event(self, **extra: Any) -> Event:
        sig = self.row.sig
        return Event(
            kind=self.kind,
            family=sig.family,
            signature=sig.name,
            severity=self.severity() if self.kind == "crash" else sig.severity,
            offset=self.offset,
            end=self.end,
            t=self.t,
            line=self.line,
            reason=self.reason if self.reason is not None else sig.reason,
            pc=self.pc,
            backtrace=tuple(self.backtrace),
            trace=tuple(self.trace),
            detail=dict(self.detail),
            crash_offset=self.crash_offset,
            **extra,
        )


def clean(raw: bytes) -> str:
    if b"\x1b" in raw:
        raw = strip_ansi(raw)[0]
    return raw.decode("utf-8", "replace").rstrip()


@functools.lru_cache(maxsize=8)
def rows_of(signatures: tuple[Signature, ...]) -> tuple[Row, ...]:
    """A table's rows, compiled once (a detector per connection then costs no regex compiling)."""
    return tuple(Row(sig) for sig in signatures)


def escape(literal: bytes) -> bytes:
    return b"".join(bytes([c]) if chr(c).isalnum() and c < 0x80 else b"\\x%02x" % c for c in literal)
