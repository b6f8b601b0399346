"""Search a read's growing window for its ``match`` pattern without stalling the event loop.

RE2 keeps every search linear, but linear can still be long: a pattern that defeats RE2's DFA
falls back to its NFA at roughly ``program_size`` × 8 ns per byte, so ``[ab]*a[ab]{500}c`` over a
4 MiB history takes seconds. Searches whose estimated work is small run inline (the common case:
a few KiB of new bytes); larger ones run in a worker thread (RE2 releases the GIL) in pieces, and
stop between pieces once the read's deadline has passed, returning how far they got.
"""

from __future__ import annotations

import time

import anyio.to_thread

from serial_mcp.core.match import Matcher, Span

INLINE_WORK = 1 << 22  # bytes × RE2 instructions searched on the event loop (about 30 ms at worst)
PIECE_BYTES = 64 * 1024  # new bytes searched per piece in the worker thread


def _work(matcher: Matcher, window_len: int, searched: int) -> int:
    if matcher.program_size == 0:  # literal: a memchr-speed scan
        return 0
    return (window_len - matcher.resume_at(searched)) * matcher.program_size


def _scan(matcher: Matcher, window: bytes, searched: int, deadline: float) -> tuple[Span | None, int]:
    pos = searched
    while True:
        stop = min(len(window), max(pos, 0) + PIECE_BYTES)
        span = matcher.find(window, pos, stop)
        if span is not None or stop >= len(window) or time.monotonic() >= deadline:
            return span, stop
        pos = stop


def search_inline(
    matcher: Matcher, window: bytes | bytearray, searched: int
) -> tuple[Span | None, int] | None:
    """``find_in_window`` done at once when its work is small (the common case: no coroutine, no
    thread); None when it must run in a worker (``search_in_worker``)."""
    if _work(matcher, len(window), searched) <= INLINE_WORK:
        return matcher.find(window, searched), len(window)
    return None


async def search_in_worker(
    matcher: Matcher, window: bytes | bytearray, searched: int, deadline: float
) -> tuple[Span | None, int]:
    """The search ``search_inline`` declined: in a worker thread, in pieces, until ``deadline``."""
    return await anyio.to_thread.run_sync(
        _scan, matcher, bytes(window), searched, deadline, abandon_on_cancel=True
    )


async def find_in_window(
    matcher: Matcher, window: bytes | bytearray, searched: int, deadline: float
) -> tuple[Span | None, int]:
    """The first match in ``window`` (``window[:searched]`` holds none) and how far it was searched.

    The second value is ``len(window)`` unless the deadline (``time.monotonic()``) passed first.
    """
    found = search_inline(matcher, window, searched)
    if found is not None:
        return found
    return await search_in_worker(matcher, window, searched, deadline)
