"""A sans-IO detector of boots, resets and crashes in a received byte stream (in the style of h11).

``feed(data, offset, t)`` returns the events the bytes complete, ``poll(t)`` what only time completes (a dump
that stopped, a crash whose reset never came), ``flush()`` ends the stream; the receive buffer is one
unfinished line of at most ``MAX_LINE`` bytes. Lines are cut at CR, LF or CRLF; one prefilter pass per
chunk (:mod:`.prefilter`, over the trigger literals of :mod:`.signatures`) finds the lines worth a look, and
a line is examined only if it holds a trigger or a block is open, at most once. Which events it yields and
how they link up: :mod:`.model`, :mod:`.boot_loop`, :mod:`.precision` and docs/events.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Final

from serial_mcp.core.events.block import MAX_FRAMES as MAX_FRAMES
from serial_mcp.core.events.block import Block, Row, clean
from serial_mcp.core.events.boot_loop import EXPECT_WINDOW_S, BootGate, BootLoopWatch, expected_reset
from serial_mcp.core.events.model import Event
from serial_mcp.core.events.precision import Traceback, as_exception, glitched, label
from serial_mcp.core.events.reading import grow, inside, rules
from serial_mcp.core.events.signatures import SIGNATURES, Signature
from serial_mcp.core.events.table import compile_table, find_head

MAX_LINE: Final = 4096  # bytes of a line kept and examined; the rest of a longer line is ignored
DEFAULT_BOOT_LOOP_COUNT: Final = 3
DEFAULT_BOOT_LOOP_WINDOW: Final = 30.0  # seconds
DEFAULT_IDLE: Final = 1.0  # seconds without a byte after which an open block is complete
DEFAULT_RESET_GRACE: Final = 2.0  # seconds a critical crash waits for the boot that is its reset

_TERM: Final = re.compile(rb"[\r\n]")
_SEARCH: Final = (-1, -1)  # _head's hint "not known: search the line" (None: no trigger in it)
_COUNTERS: Final = (  # noqa: SIM905 (two lines of names read better than eleven)
    "bytes_scanned lines_examined bytes_examined events boots stages resets crashes exceptions boot_loops"
    " gaps overlap_bytes"
).split()


class EventDetector:
    """Boots, stages, resets, crashes and boot loops found in a received byte stream.

    ``boot_loop_count`` boots within ``boot_loop_window`` seconds make a ``boot_loop`` event (once per loop:
    the next one needs the loop to have stopped first). ``boot_patterns`` are a user's own boot banners, RE2
    regexes over the raw line bytes without the line end (``compile_re2`` rules: size-bounded, linear time;
    ``$`` is found before an LF, not before a lone CR). ``idle`` is how long
    an open crash dump may go without a byte before it counts as complete; ``reset_grace`` how long a
    critical crash waits for the boot that is its reset (and at most its row's ``grace_lines`` lines).
    """

    def __init__(
        self,
        *,
        boot_loop_count: int = DEFAULT_BOOT_LOOP_COUNT,
        boot_loop_window: float = DEFAULT_BOOT_LOOP_WINDOW,
        boot_patterns: Sequence[bytes] = (),
        idle: float = DEFAULT_IDLE,
        reset_grace: float = DEFAULT_RESET_GRACE,
        signatures: Iterable[Signature] = SIGNATURES,
    ) -> None:
        self._loops = BootLoopWatch(max(2, int(boot_loop_count)), float(boot_loop_window))
        self._gate = BootGate()
        self._tb: Traceback | None = None  # a traceback waiting for the prompt (exception) or not (crash)
        self._idle = float(idle)
        self._reset_grace = float(reset_grace)
        table = compile_table(tuple(signatures), boot_patterns)
        self._table = table
        self._rows, self._user_rows, self._by_trigger, self._trigger, self._hints = table
        # The longest trigger literal, or None when a user's boot pattern (a regex of any length) is in the
        # prefilter: bytes a caller of ``may_emit(after_tail=False)`` must repeat from before ``data``.
        self.trigger_span = None if self._user_rows else max(map(len, self._by_trigger), default=0)
        self._pos: int | None = None  # absolute offset of the next byte expected
        self._tail = bytearray()  # the first MAX_LINE bytes of the unfinished line
        self._tail_start: int | None = None
        self._tail_t = 0.0
        self._tail_dropped = 0  # bytes of the unfinished line past its first MAX_LINE
        self._block: Block | None = None
        self._pending: Block | None = None  # a critical crash waiting for its reset
        self._rank: int | None = None  # the boot chain's last rank; None: the next banner is a new boot
        self._unreset: int | None = None  # offset of the last critical crash no boot has followed yet
        self._c = dict.fromkeys(_COUNTERS, 0)

    # --- the public surface ---------------------------------------------------------------------------------

    def feed(self, data: bytes, offset: int, t: float) -> list[Event]:
        """The events that ``data`` (received at ``t``, its first byte at absolute ``offset``) completes.

        A gap (``offset`` past the expected one: bytes were lost) drops the unfinished line; an overlap (bytes
        already fed) is skipped."""
        out: list[Event] = []
        self._expire(t, out)
        if type(data) is not bytes:
            data = bytes(data)  # a bytearray or memoryview from the pump: RE2 and the slices want bytes
        if self._pos is None:
            self._pos = offset
        if offset > self._pos:
            self._c["gaps"] += 1
            self._tail.clear()
            self._tail_start = None
            self._tail_dropped = 0
            self._pos = offset
        elif offset < self._pos:
            skip = self._pos - offset
            self._c["overlap_bytes"] += min(skip, len(data))
            if skip >= len(data):
                return out
            data, offset = data[skip:], self._pos
        n = len(data)
        if not n:
            return out
        self._gate.fed(offset, t)
        self._c["bytes_scanned"] += n
        self._pos = offset + n
        last = max(data.rfind(b"\n"), data.rfind(b"\r"))
        start, tail = self._tail_start, self._tail
        if start is not None:  # a line is in progress
            if last < 0:
                room = max(0, MAX_LINE - len(tail))
                tail += data[:room]
                self._tail_dropped += max(0, n - room)
                return out
            held, lt = len(tail), self._tail_t
            self._tail_start = None
            self._tail_dropped = 0
            # the held line ends in data: it is read on its own (its kept start plus data up to its end),
            # then data's whole lines after it (no copy of data to join the two)
            j = _TERM.search(data)
            assert j is not None
            raw = bytes(tail + data[: max(0, min(j.start(), MAX_LINE - held))])
            tail.clear()
            self._maybe_line(raw, start, lt, out)
            if last > j.start():
                self._region(data, j.start() + 1, last + 1, offset, t, out)
        elif last >= 0:
            self._region(data, 0, last + 1, offset, t, out)
        if last + 1 < n:
            rest = data[last + 1 :]
            tail += rest[:MAX_LINE]
            self._tail_dropped = max(0, len(rest) - MAX_LINE)
            self._tail_start = offset + last + 1
            self._tail_t = t
        if self._prompt_in_tail():
            self._verdict(out, True)  # the prompt waits for input: no line end yet
        return out

    def poll(self, t: float) -> list[Event]:
        """The events that time alone completes by ``t``: an open dump idle for ``idle`` seconds, a crash
        whose reset did not come within ``reset_grace``. Call it when :meth:`deadline` has passed."""
        out: list[Event] = []
        self._expire(t, out)
        return out

    def deadline(self) -> float | None:
        """When :meth:`poll` next has something to complete, or None."""
        times = []
        if self._block is not None:
            times.append(self._block.last_t + self._idle)
        if self._pending is not None:
            times.append(self._pending.last_t + self._reset_grace)
        if self._tb is not None:
            times.append(self._tb.blk.last_t + self._idle)
        return min(times) if times else None

    def flush(self) -> list[Event]:
        """End of stream: the unfinished line is read as a line and everything open is completed."""
        out: list[Event] = []
        if self._tail_start is not None:
            raw, start, lt = bytes(self._tail), self._tail_start, self._tail_t
            self._tail.clear()
            self._tail_start = None
            self._tail_dropped = 0
            self._maybe_line(raw, start, lt, out)
        if self._block is not None:
            self._close(self._block, out)
        if self._pending is not None:
            self._emit_crash(self._pending, out)
        self._verdict(out, False)
        return out

    def may_emit(self, data: bytes, *, after_tail: bool = True) -> bool:
        """Whether feeding ``data`` next could complete an event: a dump or a crash is open, or a trigger
        lies in the unfinished line plus ``data`` (``after_tail=False``: in ``data`` alone, a caller that
        already asked about the unfinished line and the bytes before ``data``). False means it cannot (a
        caller may skip waiting for it). It only reads, so another thread than the feeding one may ask
        (an answer raced by a feed is as good as one asked a moment earlier)."""
        if self._block is not None or self._pending is not None or self._tb is not None:
            return True
        return self._trigger.found(bytes(self._tail) + data if after_tail else data)

    def note_tx(self, offset: int, t: float) -> None:
        """The host wrote to the device at ``t`` when ``offset`` bytes had been received: a banner right
        after it, in the same unbroken stream, is its answer (``version``, ``dmesg``), not a boot."""
        self._gate.note_tx(offset, t)

    def expect_reset(self, cause: str, offset: int, t: float, window: float = EXPECT_WINDOW_S) -> None:
        """A reset the user caused or expected (``cause``: ``"capture_boot"``, ``"DTR/RTS by esptool"``)
        at ring ``offset`` and time ``t``: the first boot within ``window`` seconds after it is reported
        after a ``reset`` event with that cause, and counts toward no boot loop."""
        self._gate.expect(cause, offset, t, window)

    def counters(self) -> dict[str, int]:
        """Work done and found: bytes scanned by the prefilter, lines and bytes examined, events by kind,
        gaps; ``buffered_bytes`` is the unfinished line held (at most ``MAX_LINE``)."""
        return {**self._c, "buffered_bytes": len(self._tail)}

    # --- scanning -------------------------------------------------------------------------------------------

    def _region(
        self,
        data: bytes,
        lo: int,
        hi: int,
        base: int,
        t: float,
        out: list[Event],
    ) -> None:
        """Whole lines ``data[lo:hi]`` (``data[hi - 1]`` is a line end), ``data[0]`` at offset ``base``,
        received at ``t``."""
        i = lo
        first = self._trigger.hits(data, lo, hi).first
        next_at = next_end = -1  # the next trigger at or after i while a block is open (-1: not looked)
        resumed = False  # the search restarted inside a line: its leftmost trigger is not known
        while i < hi:
            if self._block is None and self._pending is None and self._tb is None:
                m = first(i)
                if m is None:
                    return
                p, m_end = m
                back = max(i, p - MAX_LINE)
                k = max(data.rfind(b"\n", back, p), data.rfind(b"\r", back, p))
                ls = k + 1 if k >= 0 else (i if back == i else -1)
                term = _TERM.search(data, p, hi)
                le = term.start() if term is not None else hi
                if ls < 0 or p >= ls + MAX_LINE:
                    i = le + 1  # the trigger lies past the part of a long line that is kept
                    continue
                if m_end > ls + MAX_LINE:
                    i = p + 1  # it straddles the cut: another trigger may still lie inside
                    resumed = True
                    continue
                hint = (p - ls, m_end - ls) if self._hints and not resumed else _SEARCH
                resumed = False
                self._line(data[ls : min(le, ls + MAX_LINE)], base + ls, t, out, hint)
                i = le + 1
            else:  # a block is open: every line is read; one search finds the next trigger for them all
                if next_at < i:
                    nm = first(i) if self._hints else None
                    next_at, next_end = nm if nm is not None else (hi, hi)
                term = _TERM.search(data, i, hi)
                le = term.start() if term is not None else hi
                if le > i:
                    if not self._hints:
                        hint = _SEARCH
                    elif next_at >= le:
                        hint = None  # no trigger in this line (no trigger holds a line end)
                    elif next_end > i + MAX_LINE:
                        hint = _SEARCH  # the trigger straddles or passes the kept part: read what is kept
                    else:
                        hint = (next_at - i, next_end - i)
                    self._line(data[i : min(le, i + MAX_LINE)], base + i, t, out, hint)
                i = le + 1

    def _maybe_line(self, raw: bytes, start: int, t: float, out: list[Event]) -> None:
        if not raw:
            return
        if self._block is not None or self._pending is not None or self._trigger.found(raw):
            self._line(raw, start, t, out)
        elif self._tb is not None:
            self._after_traceback(clean(raw), None, out)

    def _head(
        self, raw: bytes, text: str, hint: tuple[int, int] | None = _SEARCH
    ) -> tuple[Row, re.Match[str] | None] | None:
        """The row whose head this line is; ``hint`` is where the leftmost trigger is in ``raw`` when the
        caller knows it (None: there is none)."""
        if hint is _SEARCH:
            hint = self._trigger.search(raw)
        return None if hint is None else find_head(self._table, raw, text, hint)

    def _line(
        self, raw: bytes, start: int, t: float, out: list[Event], hint: tuple[int, int] | None = _SEARCH
    ) -> None:
        if self._tb is not None and self._block is None and self._pending is None:
            if hint is _SEARCH:
                hint = self._trigger.search(raw)
            if hint is None:  # a line without a trigger after a traceback: only its prompt matters
                self._after_traceback(clean(raw), None, out)
                return
        self._c["lines_examined"] += 1
        self._c["bytes_examined"] += len(raw)
        text = clean(raw)
        if not text.strip():
            return
        end = start + len(raw)
        blk = self._block
        head = None if blk is not None and blk.quiet else self._head(raw, text, hint)
        if self._tb is not None:
            self._after_traceback(text, head, out)
        if blk is not None and blk.quiet:
            self._inside(blk, text, end, t, out)  # a core dump: no heads are looked for inside it
            return
        if blk is not None:
            if head is not None and head[0].name in blk.row.merges:
                self._continue(blk, head[1], text, end, t, out, merged=head[0])
                return
            if head is None and not self._inside(blk, text, end, t, out):
                return
            if self._block is not None:
                self._close(blk, out)
        pend = self._pending
        if pend is not None:
            if head is None:
                pend.grace += 1
                if pend.grace >= pend.row.sig.grace_lines:
                    self._emit_crash(pend, out)
                return
            row = head[0]
            if row.name in pend.row.merges_after:
                self._pending = None
                self._block = pend
                self._continue(pend, head[1], text, end, t, out, merged=row)
                return
            if row.sig.kind == "reset":
                pend.grace += 1  # "Rebooting..." after a dump: still waiting for the boot
            elif row.sig.kind != "boot":
                self._emit_crash(pend, out)
        if head is not None:
            self._start(head[0], head[1], text, start, end, t, out)

    def _inside(self, blk: Block, text: str, end: int, t: float, out: list[Event]) -> bool:
        """A line without a head inside an open block; False once it was taken by the block."""
        outcome = inside(blk, text, end, t)
        if outcome != "open":
            self._close(blk, out)
        return outcome == "not_mine"

    def _continue(
        self,
        blk: Block,
        m: re.Match[str] | None,
        text: str,
        end: int,
        t: float,
        out: list[Event],
        merged: Row | None = None,
    ) -> None:
        if grow(blk, m, text, end, t, merged=merged):
            self._close(blk, out)

    # --- events ---------------------------------------------------------------------------------------------

    def _start(
        self, row: Row, m: re.Match[str] | None, text: str, start: int, end: int, t: float, out: list[Event]
    ) -> None:
        sig = row.sig
        line = label(text, m)
        if sig.kind == "boot":
            rank = sig.rank if sig.rank is not None else 0
            new = self._opens_boot(sig)
            if new and not self._gate.is_boot(start, end, t, self._reset_evidence(rank, text, m)):
                return  # a banner-like answer in an interactive session (U-Boot version, dmesg): no boot
            self._rank = rank
            blk = Block(row, "boot" if new else "stage", start, end, t, line)
            blk.take(m)
            if new:
                pend = self._pending
                if pend is not None and pend.severity() != "critical":
                    self._emit_crash(pend, out)  # the system lived on: this boot is not its reset
                    pend = None
                blk.crash, self._pending = pend, None
                blk.crash_offset = self._unreset
                self._unreset = None
            if sig.max_lines:
                self._block = blk
            else:
                self._emit_boot(blk, out)
            return
        blk = Block(row, sig.kind, start, end, t, line)
        blk.take(m)
        if sig.kind == "reset":
            self._emit(blk.event(), out)
            return
        rules(blk, text)
        if sig.max_lines:
            self._block = blk
        else:
            self._close(blk, out)

    def _close(self, blk: Block, out: list[Event]) -> None:
        if self._block is blk:
            self._block = None
        if blk.kind in ("boot", "stage"):
            self._emit_boot(blk, out)
        elif blk.row.sig.resumes is not None and blk.severity() != "critical":
            self._tb = Traceback(blk)  # did the program go on (its prompt comes back) or stop?
        elif blk.severity() == "critical" or blk.row.merges_after:
            blk.grace = 0
            self._pending = blk  # wait for the boot that resets it, or a panic that follows
            if blk.severity() == "critical":
                self._rank = None  # the system is down: the next banner is a new boot
        else:
            self._emit_crash(blk, out)

    def _emit_crash(self, blk: Block, out: list[Event], boot: Block | None = None) -> None:
        if self._pending is blk:
            self._pending = None
        event = blk.event() if boot is None else blk.event(reset_offset=boot.offset, reset_reason=boot.reason)
        if event.severity == "critical":
            self._unreset = event.offset
        self._emit(event, out)

    def _emit_boot(self, blk: Block, out: list[Event]) -> None:
        if blk.crash is not None:
            crash, blk.crash = blk.crash, None
            self._emit_crash(crash, out, boot=blk)
            self._unreset = None
            blk.crash_offset = crash.offset
        if blk.kind != "boot":
            self._emit(blk.event(), out)
            return
        expected = self._gate.booted(blk)
        if expected is not None:  # the user's reset: said as such, and no part of a boot loop
            self._emit(expected_reset(expected, blk), out)
            if "reset" not in blk.detail:
                blk.detail["reset"] = expected.cause
            self._emit(blk.event(), out)
            self._loops.clear()
            return
        self._emit(blk.event(), out)
        if (loop := self._loops.boot(blk)) is not None:
            self._emit(loop, out)

    def _emit(self, event: Event, out: list[Event]) -> None:
        out.append(event)
        c = self._c
        c["events"] += 1
        c["crashes" if event.kind == "crash" else event.kind + "s"] += 1
        if event.kind == "reset" or (event.kind == "crash" and event.severity == "critical"):
            self._gate.reset_seen(event.t)

    def _reset_evidence(self, rank: int, text: str, m: re.Match[str] | None) -> bool:
        """What says a banner is a boot whatever came before it: a ROM speaks only after a reset, a
        critical crash awaits its reset, or reset glitches precede it on its line."""
        return rank == 0 or self._pending is not None or self._unreset is not None or glitched(text, m)

    def _opens_boot(self, sig: Signature) -> bool:
        """Whether a banner of ``sig`` would begin a new boot (not a later stage of this one)."""
        rank = sig.rank if sig.rank is not None else 0
        return not sig.handoff and (self._rank is None or rank <= self._rank)

    def _after_traceback(
        self, text: str, head: tuple[Row, re.Match[str] | None] | None, out: list[Event]
    ) -> None:
        """A line after a traceback: the prompt (an ``exception``), a boot, reset or crash (a ``crash``)."""
        assert self._tb is not None
        stops = head is not None and (head[0].sig.kind != "boot" or self._opens_boot(head[0].sig))
        resumed = self._tb.after(text, stops)
        if resumed is not None:
            self._verdict(out, resumed)

    def _prompt_in_tail(self) -> bool:
        return (
            self._tb is not None
            and self._tail_start is not None
            and self._tb.prompt(clean(bytes(self._tail)))
        )

    def _verdict(self, out: list[Event], resumed: bool) -> None:
        tb, self._tb = self._tb, None
        if tb is not None:
            self._emit(as_exception(tb.blk.event()), out) if resumed else self._emit_crash(tb.blk, out)

    def _expire(self, t: float, out: list[Event]) -> None:
        blk = self._block
        if blk is not None and t - blk.last_t >= self._idle:
            self._close(blk, out)
        pend = self._pending
        if pend is not None and t - pend.last_t >= self._reset_grace:
            self._emit_crash(pend, out)
        if self._tb is not None and t - self._tb.blk.last_t >= self._idle:
            self._verdict(out, self._prompt_in_tail())
