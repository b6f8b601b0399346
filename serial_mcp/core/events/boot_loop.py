"""Boot loops: a board that boots ``count`` times within ``window`` seconds is caught in one.

One ``boot_loop`` event per loop, at the boot that completes the count: the next one needs the
loop to have stopped first (a boot outside the window). Sans-IO, fed by ``EventDetector``.
"""

from __future__ import annotations

from collections import deque

from serial_mcp.core.events.block import Block
from serial_mcp.core.events.model import Event


class BootLoopWatch:
    """The last ``count`` boots (offset, end, time); ``boot`` says when they make a loop."""

    def __init__(self, count: int, window: float) -> None:
        self._boots: deque[tuple[int, int, float]] = deque(maxlen=count)
        self._window = window
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
