"""The sync-word scanning engine behind binary, UBX, RTCM3, GNSS-mixed and Modbus RTU framing.

A decoder is a set of :class:`FrameRule` objects, each knowing its sync words, how long a
frame starting at a sync is (from its length field or its function code) and what the
frame's checksum says. The engine finds the earliest sync of any rule with one compiled
regex (C speed), asks that rule for the frame's length and, once the frame has arrived,
for its :class:`~serial_mcp.core.framing.base.Frame`.

Resynchronisation: an impossible length, or a bad checksum when another sync word starts
inside the frame, means the sync was false (or the frame is corrupt): the engine resumes
the search one byte after it, so a good frame that follows (even one that started inside
the bad candidate) is never lost. A bad-checksum frame with no sync inside it cannot hide
another frame and is emitted with ``checksum_valid`` False (``validate`` drops and counts
it). Bytes that end up in no frame are counted in ``bytes_skipped``.

Decisions depend only on the bytes, never on how they were chunked: a candidate is judged
only once all of it has arrived, and a possible partial sync at the end of the input is
kept for the next feed.

Bounded work: checking a candidate costs its length (the checksum), and candidates may overlap
(every 5th byte a sync claiming 512 KiB: each would be checked whole, O(n × max_length)). A
candidate that turns out false is paid for from a check credit that grows by
:data:`CHECK_PER_BYTE` per byte the scan moves on and holds at most a few frames' worth; a
candidate longer than the credit is passed over as a false sync, before its bytes are waited for. A
real stream never runs short (its frames cost nothing, false candidates are rare), so its
frames are exactly those of an unbounded scan; a flood of overlapping false candidates is
checked at most ``CHECK_PER_BYTE`` bytes per byte it sends (plus the credit). The credit is a
function of stream positions, so chunking still changes nothing.

Silences (:meth:`ScanDecoder.silence`, Modbus RTU's 3.5 characters) end only frames whose length
cannot be known (the rule's ``measure`` is told ``final``); a candidate whose length is known keeps
waiting for its bytes, since USB-serial adapters hand one reply over in packets 1-16 ms apart.
The decoder remembers where each silence fell inside a waiting candidate: when a frame that
starts at such a silence arrives whole and checks (ending no later than the candidate), or the
candidate turns out bad, the bytes before the silence were a torn frame whose rest never came;
they are counted as skipped and the search resumes at the silence. Only :meth:`ScanDecoder.flush`
(end of stream) gives up a waiting candidate.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from typing import Final, Protocol, cast, runtime_checkable

from serial_mcp.core.framing._receivebuffer import BufferedDecoder, as_bytes
from serial_mcp.core.framing.base import Frame, FrameEvent

__all__ = ["NEED", "REJECT", "FrameRule", "ScanDecoder", "declares"]

#: ``measure`` result: too few bytes to tell the length yet.
NEED: Final = 0
#: ``measure`` result: no frame can start here (a false sync or an impossible length).
REJECT: Final = -1
#: Bytes of false candidates that may be checked per byte of stream (see the module docstring).
CHECK_PER_BYTE: Final = 16
#: The credit's ceiling: this much, or two of the rules' longest frames if that is more.
CREDIT_FLOOR: Final = 1 << 20


class FrameRule(Protocol):
    """One kind of frame the engine looks for."""

    @property
    def syncs(self) -> Sequence[bytes]:
        """The byte strings a frame of this kind starts with (alternatives)."""
        ...

    @property
    def resync_on_bad(self) -> bool:
        """Resume one byte after a bad-checksum frame that has a sync inside (False: take it whole)."""
        ...

    def measure(self, work: bytes, s: int, n: int, final: bool) -> int:
        """Length of the frame whose sync starts at ``work[s]`` (only ``work[:n]`` has arrived),
        NEED or REJECT. ``final``: no more bytes will come (end of stream or a line silence)."""
        ...

    def frame(self, work: bytes, s: int, e: int, base: int) -> Frame | None:
        """The frame ``work[s:e]`` (absolute offset ``base + s``), or None to consume it silently."""
        ...


# (sync word, rule.measure, rule.frame, rule): bound methods looked up once, not per frame.
_Measure = Callable[[bytes, int, int, bool], int]
_Make = Callable[[bytes, int, int, int], "Frame | None"]
_Entry = tuple[bytes, _Measure, _Make, FrameRule]


_DECLARED: dict[tuple[type, type], bool] = {}


def declares(obj: object, capability: type) -> bool:
    """Whether ``obj`` declares ``capability`` (a runtime-checkable Protocol), asked once per class:
    such an ``isinstance`` costs microseconds, and decoders are built per read."""
    key = (type(obj), capability)
    known = _DECLARED.get(key)
    if known is None:
        known = _DECLARED[key] = isinstance(obj, capability)
    return known


@runtime_checkable
class FastRule(Protocol):
    """A rule with a specialised ``frame`` (``BinaryLayout.fast_frame``; None where it has none)."""

    fast_frame: _Make | None


@runtime_checkable
class SizedRule(Protocol):
    """A rule with a longest frame: the check credit is at least two of them."""

    max_length: int


def _maker(rule: FrameRule) -> _Make:
    """The rule's ``frame``, or its specialised equivalent (``fast_frame``) where it has one."""
    fast = cast(FastRule, rule).fast_frame if declares(rule, FastRule) else None
    return fast if fast is not None else rule.frame


class ScanDecoder(BufferedDecoder):
    """Incremental decoder over one or more :class:`FrameRule`; see the module docstring."""

    __slots__ = (
        "_credit",
        "_credit_at",
        "_credit_max",
        "_entries",
        "_lead",
        "_max_sync",
        "_prefixes",
        "_quiet",
        "_rules",
        "_search",
    )

    def __init__(self, rules: Sequence[FrameRule], offset: int = 0) -> None:
        if not rules or not all(rule.syncs for rule in rules):
            raise ValueError("every rule needs at least one sync word")
        groups = []
        syncs: list[bytes] = []
        for rule in rules:
            alternatives = sorted(set(rule.syncs), key=len, reverse=True)
            if not all(alternatives):
                raise ValueError("sync words must be non-empty")
            syncs.extend(alternatives)
            groups.append(b"(" + b"|".join(re.escape(a) for a in alternatives) + b")")
        self._search = re.compile(b"|".join(groups)).search
        self._rules = tuple(rules)
        self._max_sync = max(len(s) for s in syncs)
        self._prefixes = frozenset(s[:k] for s in syncs for k in range(1, len(s)))
        # Fast path for back-to-back frames: a first byte that begins exactly one sync word.
        self._entries: list[_Entry] = [(b"", r.measure, _maker(r), r) for r in self._rules]
        firsts = [s[0] for s in syncs]
        self._lead: dict[int, _Entry] = {
            s[0]: (s, r.measure, _maker(r), r)
            for r in self._rules
            for s in r.syncs
            if firsts.count(s[0]) == 1
        }
        super().__init__(offset)
        longest = max((cast(SizedRule, r).max_length for r in rules if declares(r, SizedRule)), default=0)
        self._credit_max = max(CREDIT_FLOOR, 2 * longest)
        self._credit = self._credit_max  # bytes of false candidates that may still be checked ...
        self._credit_at = offset  # ... as of this absolute stream position
        self._quiet: list[int] = []  # absolute stream positions of silences inside a waiting candidate

    @property
    def bytes_skipped(self) -> int:
        """Bytes so far that belong to no frame (garbage, false syncs, rejected candidates)."""
        return self._rx.skipped

    def pending_bytes(self) -> bytes:
        """The undecided bytes, from :attr:`pending_start` (a candidate waiting for more)."""
        return bytes(self._rx.buf)

    def reset(self, offset: int) -> None:
        """Drop partial state; the next byte fed is at absolute ``offset``."""
        self._rx.reset(offset)
        self._credit, self._credit_at = self._credit_max, offset
        self._quiet.clear()

    def _credit_until(self, start: int) -> int:
        """The check credit of a candidate that starts at absolute position ``start`` (candidates
        are taken in stream order, so ``start`` never goes back)."""
        grown = self._credit + CHECK_PER_BYTE * (start - self._credit_at)
        return grown if grown < self._credit_max else self._credit_max

    def _pay(self, start: int, cost: int) -> None:
        """The false candidate at absolute ``start`` was checked: ``cost`` bytes."""
        self._credit = self._credit_until(start) - cost
        self._credit_at = start

    def feed(self, data: bytes) -> list[FrameEvent]:
        """Consume ``data``; return the frames it completes."""
        out: list[FrameEvent] = []
        if not data:
            return out
        work = self._rx.absorb(as_bytes(data))
        if work is not None:
            self._scan(work, out, final=False)
        return out

    def silence(self) -> list[FrameEvent]:
        """The line went quiet: a frame whose length only its end can tell (Modbus RTU's unknown
        functions) ends here; a candidate whose length is known keeps waiting, and the silence's
        position is remembered (see the module docstring)."""
        out: list[FrameEvent] = []
        rx = self._rx
        if rx.buf:
            work = bytes(rx.buf)
            rx.buf.clear()
            self._scan(work, out, final=True)
            if rx.buf:
                end = rx.base + len(rx.buf)
                if not self._quiet or self._quiet[-1] < end:
                    self._quiet.append(end)
        return out

    def flush(self) -> list[FrameEvent]:
        """End of stream: frames of unknown length end, a waiting candidate is given up (and the
        search resumes after its sync); what is left over is counted as skipped."""
        out: list[FrameEvent] = []
        rx = self._rx
        if rx.buf:
            work = bytes(rx.buf)
            rx.buf.clear()
            self._scan(work, out, final=True, end=True)
        self._quiet.clear()
        return out

    def _after_quiet(self, work: bytes, s: int, limit: int, base: int, final: bool) -> int | None:
        """Where in ``work`` a frame starts at a silence inside ``work[s+1:limit]``, has arrived
        whole by ``limit`` and checks; None if none does."""
        quiet = self._quiet
        for i in range(bisect.bisect_right(quiet, base + s), len(quiet)):
            q = quiet[i] - base
            if q >= limit:
                break
            m = self._search(work, q)
            if m is None or m.start() != q:
                continue
            _, measure, make, _ = self._entries[m.lastindex - 1]  # type: ignore[operator]  # a group matched
            length = measure(work, q, limit, final)
            if length > 0 and q + length <= limit:
                frame = make(work, q, q + length, base)
                if frame is not None and frame.checksum_valid:
                    return q
        return None

    def _first_quiet(self, s: int, e: int, base: int) -> int | None:
        """Where in ``work`` the first silence inside ``work[s+1:e]`` fell, if one did."""
        quiet = self._quiet
        i = bisect.bisect_right(quiet, base + s)
        return quiet[i] - base if i < len(quiet) and quiet[i] < base + e else None

    def _partial(self, work: bytes, lo: int, n: int) -> int:
        """Length of the longest tail of ``work[lo:n]`` that may be the start of a sync word."""
        prefixes = self._prefixes
        for size in range(min(self._max_sync - 1, n - lo), 0, -1):
            if work[n - size : n] in prefixes:
                return size
        return 0

    def _sync_inside(self, work: bytes, s: int, e: int) -> bool:
        """Does a sync word (or the start of one, at the end) begin within ``work[s+1:e]``?"""
        return self._search(work, s + 1, e) is not None or self._partial(work, s + 1, e) > 0

    def _scan(self, work: bytes, out: list[FrameEvent], final: bool, end: bool = False) -> None:
        rx = self._rx
        quiet = self._quiet
        base = rx.base
        n = len(work)
        search = self._search
        entries = self._entries
        lead = self._lead
        prefixes = self._prefixes
        max_sync = self._max_sync
        append = out.append
        pos = done = 0  # search position; bytes before ``done`` are emitted or counted
        need = skipped = 0
        while True:
            hit = lead.get(work[pos]) if pos < n else None
            if hit is not None and work.startswith(hit[0], pos):  # the next frame follows at once
                s = pos
                _, measure, make, rule = hit
            else:
                m = search(work, pos)
                if m is None:
                    cut = n if final else n - self._partial(work, pos, n)
                    break
                s = m.start()
                if not final and n - s < max_sync and work[s:n] in prefixes:
                    cut = s  # a longer sync alternative may still arrive here
                    break
                _, measure, make, rule = entries[m.lastindex - 1]  # type: ignore[operator]  # a group matched
            length = measure(work, s, n, final)
            e = s + length
            if length > self._credit and length > self._credit_until(base + s):
                pos = s + 1  # more than false candidates may still cost: passed over as one
                continue
            if length <= 0 or e > n:  # REJECT, NEED, or not all here yet
                if length == REJECT or end:
                    pos = s + 1
                    continue
                if quiet and (q := self._after_quiet(work, s, n, base, final)) is not None:
                    pos = q  # a frame after a silence checks: what waited before it was torn
                    continue
                cut, need = s, (0 if length == NEED else length)
                break
            if quiet and (q := self._first_quiet(s, e, base)) is not None:
                q_ok = self._after_quiet(work, s, e, base, final)
                frame = None if q_ok is not None else make(work, s, e, base)
                if q_ok is not None or (frame is not None and frame.checksum_valid is False):
                    pos = q if q_ok is None else q_ok  # torn before the silence: resume there
                    continue
            else:
                frame = make(work, s, e, base)
            if frame is not None:
                if frame.checksum_valid is False and rule.resync_on_bad and self._sync_inside(work, s, e):
                    self._pay(base + s, length)
                    pos = s + 1
                    continue
                append(frame)
            if s > done:
                skipped += s - done
            pos = done = e
        if cut > done:
            skipped += cut - done
            done = cut
        rx.skipped += skipped
        rx.keep(work, done, need)
        if quiet and quiet[0] <= rx.base:  # silences behind what is decided matter no more
            del quiet[: bisect.bisect_right(quiet, rx.base)]
