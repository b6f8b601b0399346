"""``reply="match"`` / ``"tail:N"`` (issue 26): which part of a read that waited for a match comes
back — the match and N bytes (or the frames within N bytes) before it; the rest was consumed and is
counted, and stays in the ring and the recording."""

from __future__ import annotations

from serial_mcp.core.decode import DecodedFrame
from serial_mcp.core.match import Span

__all__ = ["NO_MATCH_TAIL", "reply_cut", "reply_start"]

NO_MATCH_TAIL = 256  # reply="match" and the pattern never came: the last bytes show where it stalled


def reply_start(data: bytes, span: Span | None, before: int) -> int:
    """Where the returned part of a ``reply`` read starts: ``before`` bytes ahead of the match,
    or the last ``max(before, NO_MATCH_TAIL)`` bytes when nothing matched."""
    if span is not None:
        return max(0, span.start - before)
    return max(0, len(data) - max(before, NO_MATCH_TAIL))


def reply_cut(frames: list[DecodedFrame], match_index: int | None, before: int) -> int:
    """How many leading frames a ``reply`` read leaves out: those that end more than ``before``
    bytes ahead of the matching frame (of the last frame when nothing matched, with at least
    NO_MATCH_TAIL bytes kept)."""
    if match_index is not None:
        anchor = frames[match_index].start - before
    else:
        anchor = frames[-1].start - max(before, NO_MATCH_TAIL)
    cut = 0
    last = len(frames) - 1 if match_index is None else match_index
    while cut < last and frames[cut].end <= anchor:
        cut += 1
    return cut
