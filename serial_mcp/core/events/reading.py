"""Reading the lines of an open block (a dump over several lines, a ROM banner and its ``rst:`` line): what
each line adds to it, and whether it closes it. Internal to :class:`~serial_mcp.core.events.EventDetector`,
which closes a block when told to."""

from __future__ import annotations

import re
from typing import Final, Literal

from serial_mcp.core.events.block import Block, Row

MAX_QUIET_LINES: Final = 100_000  # lines of a core dump inside a block before the block is given up

Outcome = Literal["open", "close", "not_mine"]


def inside(blk: Block, text: str, end: int, t: float) -> Outcome:
    """A line without a head inside ``blk``: taken (the block stays ``open`` or must ``close``), or
    ``not_mine`` (close it, then read the line as any other)."""
    row = blk.row
    if blk.quiet:
        blk.quiet += 1
        blk.end, blk.last_t = end, t
        if row.quiet is not None and row.quiet[1].search(text):
            blk.quiet = 0
        elif blk.quiet > MAX_QUIET_LINES:
            return "close"
        return "open"
    if row.quiet is not None and row.quiet[0].search(text):
        blk.quiet = 1
        blk.end, blk.last_t = end, t
        return "open"
    if row.end is not None and (m := row.end.search(text)) is not None:
        blk.take(m)
        blk.end, blk.last_t = end, t
        return "close"
    if row.cont is not None and row.cont.search(text) is None:
        return "not_mine"
    return "close" if grow(blk, None, text, end, t, check_end=False) else "open"


def grow(
    blk: Block,
    m: re.Match[str] | None,
    text: str,
    end: int,
    t: float,
    check_end: bool = True,
    merged: Row | None = None,
) -> bool:
    """A line that belongs to ``blk`` (a merged head of ``merged``, or a plain line); True when it closes
    the block (its end line, or ``max_lines`` reached)."""
    blk.take(m, merged)
    rules(blk, text)
    blk.end, blk.last_t = end, t
    row = blk.row
    if check_end and row.end is not None and (e := row.end.search(text)) is not None:
        blk.take(e)
        return True
    blk.lines += 1
    return blk.lines >= row.sig.max_lines


def rules(blk: Block, text: str) -> None:
    """The block's row's rules read on a line (each only on lines holding its literal start)."""
    for needle, rule in blk.row.rules:
        if needle in text:
            blk.take(rule.search(text))
