"""Which banners are boots, which boots the firmware did to itself, and when they make a boot loop.

:class:`BootGate` — a banner-like line is a new boot only when the stream looks like one: the device was
not answering the host (no write of ours came just before it, or silence came between), or a reset
preceded it (an announced reset, a critical crash, a reset the user caused, a reset glitch on its line, a
ROM banner). So U-Boot's ``version``, ``dmesg`` or a ``cat`` of a log typed at a prompt is no boot. A
reset the user caused or expected (:meth:`BootGate.expect`: a DTR/RTS reset, ``capture_boot``, a power
cycle, a 1200-baud touch, a lend) explains the first boot after it within its window: that boot is
reported after a ``reset`` event naming the cause and never counts toward a loop.

:class:`BootLoopWatch` — ``count`` boots the firmware did to itself within ``window`` seconds are one
``boot_loop`` event, at the boot that completes the count. While the loop goes on nothing more is
emitted; the next one needs the loop to have stopped first (a boot outside the window, or a reset the
user caused). Sans-IO, fed by ``EventDetector``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Final

from serial_mcp.core.events.block import Block
from serial_mcp.core.events.model import Event

SILENCE_S: Final = 2.0  # no byte either way for this long: what follows may be a boot
ANSWER_S: Final = 30.0  # a banner this long after a write in one unbroken stream may still answer it
RESET_EVIDENCE_S: Final = 60.0  # an announced reset or critical crash explains a boot this long after
EXPECT_WINDOW_S: Final = 5.0  # default: a user's reset explains the first boot within this many seconds
COALESCE_S: Final = 1.0  # resets expected this close together are one (esptool's DTR/RTS sequence)
MAX_NOTES: Final = 8


@dataclass(slots=True)
class Expected:
    """A reset the user caused or expected: at ring ``offset``, time ``t``, explaining one boot until
    ``until``."""

    cause: str
    offset: int
    t: float
    until: float


class BootGate:
    """What the stream looked like before a banner: writes of the host, silences, resets (see module)."""

    def __init__(self) -> None:
        self._tx: deque[tuple[int, float]] = deque(maxlen=MAX_NOTES)  # (RX offset at the write, its time)
        self._expected: deque[Expected] = deque(maxlen=MAX_NOTES)
        self._prev_t: float | None = None  # time of the previous feed
        self._first: int | None = None  # offset of the first byte fed
        self._burst_t = 0.0  # time of the first feed after the last silence
        self._reset_t: float | None = None  # an announced reset or critical crash no boot followed yet

    def fed(self, offset: int, t: float) -> None:
        """Bytes received at ``t`` are being fed, from ``offset`` on."""
        if self._first is None:
            self._first = offset
        prev = self._prev_t
        if prev is None or t - prev >= SILENCE_S:
            self._burst_t = t
        self._prev_t = t

    def note_tx(self, offset: int, t: float) -> None:
        """The host wrote to the device at ``t``, when ``offset`` bytes had been received."""
        self._tx.append((offset, t))

    def expect(self, cause: str, offset: int, t: float, window: float) -> None:
        """A reset the user caused or expected at ``offset``/``t``; it explains the first boot within
        ``window`` seconds. One within ``COALESCE_S`` of an unused one only extends that one."""
        last = self._expected[-1] if self._expected else None
        if last is not None and t - last.t < COALESCE_S and t <= last.until:
            last.until = max(last.until, t + window)
            return
        self._expected.append(Expected(cause, offset, t, t + window))

    def reset_seen(self, t: float) -> None:
        """A reset was announced or a critical crash ended at ``t``: the next banner is a boot."""
        self._reset_t = t

    def is_boot(self, start: int, end: int, t: float, evidence: bool) -> bool:
        """Whether a banner line (``start``..``end``, received at ``t``) that would begin a new boot
        does: ``evidence`` is what its own row and line say (a ROM banner, a reset glitch)."""
        if evidence or self._armed(end, t) is not None:
            return True
        if self._reset_t is not None and t - self._reset_t <= RESET_EVIDENCE_S:
            return True
        tx = next((x for x in reversed(self._tx) if x[0] <= start), None)
        if tx is None or t - tx[1] > ANSWER_S or tx[0] <= (self._first or 0):
            return True  # the device speaks on its own (or had not spoken yet: opening a port may reset it)
        return self._burst_t - tx[1] >= SILENCE_S  # a silence after our write: not its answer

    def booted(self, blk: Block) -> Expected | None:
        """A boot was found: the user's reset that explains it (used up), if any."""
        self._reset_t = None
        if blk.crash_offset is not None:
            return None  # the reset of the firmware's own crash
        found = self._armed(blk.end, blk.t)
        if found is not None:
            self._expected.remove(found)
        return found

    def _armed(self, end: int, t: float) -> Expected | None:
        for e in self._expected:
            if e.offset < end and t <= e.until:
                return e
        return None


def expected_reset(e: Expected, boot: Block) -> Event:
    """The ``reset`` event a user's reset is reported as, just before the boot it explains."""
    at = min(e.offset, boot.offset)
    return Event(
        kind="reset",
        family="host",
        signature="expected_reset",
        severity="info",
        offset=at,
        end=at,
        t=e.t,
        line=e.cause,
        reason=e.cause,
    )


class BootLoopWatch:
    """The last ``count`` boots (offset, end, time); ``boot`` says when they make a loop."""

    def __init__(self, count: int, window: float) -> None:
        self._boots: deque[tuple[int, int, float]] = deque(maxlen=count)
        self._window = window
        self._looping = False

    def clear(self) -> None:
        """The user reset the device: boots before it do not make a loop with boots after it."""
        self._boots.clear()
        self._looping = False

    def boot(self, blk: Block) -> Event | None:
        """Note the boot ``blk``; the ``boot_loop`` event if it completes a new loop."""
        boots = self._boots
        boots.append((blk.offset, blk.end, blk.t))
        if len(boots) < (boots.maxlen or 0) or blk.t - boots[0][2] > self._window:
            self._looping = False
            return None
        if self._looping:
            return None
        self._looping = True
        span = blk.t - boots[0][2]
        return Event(
            kind="boot_loop",
            family=blk.row.sig.family,
            signature="boot_loop",
            severity="critical",
            offset=boots[0][0],
            end=blk.end,
            t=blk.t,
            line=f"{len(boots)} boots in {span:.1f} s",
            reason=blk.reason if blk.reason is not None else blk.row.sig.reason,
            boots=tuple(b[0] for b in boots),
        )
