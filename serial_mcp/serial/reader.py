"""The read algorithm: gather bytes from a cursor or offset until a stop condition, without polling.

Stop conditions, first one wins: ``match`` found, ``max_bytes`` gathered, the line quiet for
``idle_ms`` after data arrived, ``timeout_ms`` elapsed, the port disconnected or closed. History is
checked before waiting, so a reply that already arrived is found at once. What a read returns is
always one contiguous run ``[from_offset, next_offset)`` plus the bytes lost before it. A read that
decodes (frames, a summary) runs ``serial.decoded_read``'s loop; the request, its start and its stop
tests are ``serial.read_request``'s.

The ``match`` search never stalls the event loop: RE2 keeps it linear, but linear can still be long
(a pattern that defeats RE2's DFA runs at roughly ``program_size`` × 8 ns per byte, so
``[ab]*a[ab]{500}c`` over a 4 MiB history takes seconds). A search whose estimated work is small runs
inline (the common case: a few KiB of new bytes); a larger one in a worker thread (RE2 releases the
GIL) in pieces, stopping between pieces once the read's deadline has passed.
"""

from __future__ import annotations

import time

import anyio.to_thread

from serial_mcp import messages
from serial_mcp.core.encoding import utf8_complete_length
from serial_mcp.core.match import Matcher, Span
from serial_mcp.errors import ErrorCode, PortError
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.decoded_read import read_framed, read_summary
from serial_mcp.serial.lending import released_error
from serial_mcp.serial.read_request import (
    DEFAULT_RX_FRAMING,
    MAX_MAX_BYTES,
    MAX_TIMEOUT_MS,
    DecodeSpec,
    ReadOutcome,
    ReadRequest,
    StopReason,
    advance_cursor,
    build_decode_spec,
    build_read_request,
    outcome,
    past_line_end,
    pin_event_start,
    resolve_start,
    until_cut,
    wait_or_stop,
)
from serial_mcp.serial.reply_window import reply_start

__all__ = [  # the request side lives in read_request; these are imported from here as before
    "MAX_MAX_BYTES",
    "MAX_TIMEOUT_MS",
    "DecodeSpec",
    "ReadOutcome",
    "ReadRequest",
    "build_decode_spec",
    "build_read_request",
    "find_in_window",
    "pin_event_start",
    "read",
    "resolve_start",
]

INLINE_WORK = 1 << 22  # bytes × RE2 instructions searched on the event loop (about 30 ms at worst)
PIECE_BYTES = 64 * 1024  # new bytes searched per piece in the worker thread


def _require_not_closed(conn: Connection) -> None:
    if conn.state == "released":
        raise released_error(conn)
    if conn.state == "closed":
        raise PortError(
            ErrorCode.CONNECTION_CLOSED, messages.CONNECTION_CLOSED.format(id=conn.id), connection_id=conn.id
        )


async def read(conn: Connection, req: ReadRequest, start: int | None = None) -> ReadOutcome:
    """Run one read. ``start`` overrides ``req.from_`` (``transact`` passes its pre-write mark).

    A read that consumes a cursor holds it until it returns: concurrent reads on one cursor run
    one after another, never returning the same bytes twice."""
    _require_not_closed(conn)
    req = await pin_event_start(conn, req)  # from "last_boot" / {"event": N}: that event's offset
    if req.from_ != "cursor":
        return await _read(conn, req, start)
    async with conn.rx.reading(req.cursor, req.timeout_ms / 1000):
        return await _read(conn, req, start)


async def _read(conn: Connection, req: ReadRequest, start: int | None) -> ReadOutcome:
    if req.summary is not None:
        spec = req.decode or build_decode_spec(DEFAULT_RX_FRAMING, None)
        assert spec is not None
        return await read_summary(conn, req, spec, start)
    if req.decode is not None:
        return await read_framed(conn, req, req.decode, start)
    if req.from_ == "cursor" and start is None:
        with conn.thread_lock:
            cur = conn.rx.cursor(req.cursor)
            if cur.decoder is not None:
                cur.drop_decoder()  # a raw read after framed ones starts at the consumed position
    begin = resolve_start(conn, req) if start is None else start
    deadline = time.monotonic() + req.timeout_ms / 1000
    idle = req.effective_idle_ms
    buf = bytearray()
    from_offset = begin
    lost = 0
    searched = 0
    span: Span | None = None
    stop: StopReason | None = None
    first = True
    seq0 = conn.events.last_seq
    watch = req.reply_watch()  # a transact that named no end: its reply's echo and final
    while stop is None:
        pos = from_offset + len(buf)
        rr = conn.read_ring(pos, req.max_bytes - len(buf))
        if rr.bytes_lost:
            if first:
                lost, from_offset = rr.bytes_lost, rr.from_offset
            else:  # the ring overran us mid-read: return the contiguous part; the next read reports the gap
                stop = "overrun"
                break
        first = False
        buf += rr.data
        if req.matcher is not None and len(buf) > searched:
            # linear (RE2), resumes near the new bytes; a big search runs in a worker thread
            found = search_inline(req.matcher, buf, searched)
            if found is None:
                found = await search_in_worker(req.matcher, buf, searched, deadline)
            span, searched = found
            if span is not None:
                del buf[span.end :]
                stop = "match"
                break
        if (
            req.until is not None
            and (cut := await until_cut(conn, req, from_offset, seq0, len(buf))) is not None
        ):
            del buf[past_line_end(buf, cut) :]
            stop = "event"
            break
        if watch is not None and (cut := watch.final_end(buf)) is not None:
            del buf[cut:]
            stop = "final"  # an AT command's final result code
            break
        if len(buf) >= req.max_bytes:
            stop = "max_bytes"
            break
        have = bool(buf) if watch is None else watch.see(buf)  # a transact's echo is not its reply
        stop = await wait_or_stop(conn, from_offset + len(buf), deadline, idle, have)

    data = bytes(buf)
    if req.encoding == "utf8" and stop not in ("match", "event", "disconnected", "closed"):
        data = data[: utf8_complete_length(data)]  # a torn character stays buffered for the next read
    next_offset = from_offset + len(data)
    advanced = advance_cursor(conn, req, start, next_offset)
    skipped = 0
    if req.reply is not None and req.matcher is not None:  # reply="match"/"tail:N": the rest is counted
        skipped = reply_start(data, span, req.reply)
        data = data[skipped:]
        if req.encoding == "utf8":
            while skipped < next_offset - from_offset and data[:1] and 0x80 <= data[0] < 0xC0:
                data, skipped = data[1:], skipped + 1  # never start inside a character
        if span is not None:
            span = Span(span.start - skipped, span.end - skipped)
    result = outcome(conn, from_offset + skipped, next_offset, lost, stop, advanced)
    return result._replace(data=data, match=span, bytes_skipped=skipped or None)


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
