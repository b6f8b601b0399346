"""``read(summary=true)``: decode a window of the stream and return its summary, not its frames.

The window is the read's: from ``from`` (the cursor by default) to ``to`` (an offset: a window of
the ring, answered at once when it is all there) or, without ``to``, everything that arrives until
``timeout_ms`` passes ("the next 10 seconds"); bytes that arrived by then are all counted, even
when decoding them takes longer. Decoding goes through the same
:class:`~serial_mcp.serial.decode_feed.Feeder` as a framed read (large chunks in the decode worker,
in pieces), which folds each piece into a :class:`~serial_mcp.core.summary.StreamSummary` where it
was decoded; nothing per frame is kept, so the answer is a few KB whatever the window's length.

On a cursor the summary consumes what it counted, like a read: frames a framed read had decoded and
not yet returned are counted first, and the cursor ends after the last complete frame (a torn one
stays for the next read). Nothing consumed is left out of the counts.

The window ends at ``to``, at the timeout or, with ``until``, at the end of the first such event
(its line and line end), exactly as a read would end there; bytes the window's end leaves undecided
are reported as ``pending``, and a damaged frame among them (Modbus RTU: a reply that failed its CRC
at its shorter shape) is counted as bad.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

from serial_mcp import messages
from serial_mcp.core.summary import StreamSummary, check_fields
from serial_mcp.errors import InvalidArgument
from serial_mcp.serial import decode_feed
from serial_mcp.serial.read_request import FEED_CHUNK, DecodeSpec, ReadOutcome, ReadRequest, StopReason
from serial_mcp.serial.read_until import (
    decoder_at_start,
    outcome,
    past_line_end,
    silence_due,
    until_cut,
    wait_or_stop,
)

if TYPE_CHECKING:
    from serial_mcp.serial.connection import Connection

__all__ = ["read_summary"]


async def read_summary(
    conn: Connection, req: ReadRequest, spec: DecodeSpec, start: int | None
) -> ReadOutcome:
    """Summarise ``[start, req.to)`` (or until the timeout); see the module docstring."""
    on_cursor = req.from_ == "cursor" and start is None
    parser = spec.rx_parser.get("type") if isinstance(spec.rx_parser, dict) else spec.rx_parser
    check_fields(req.summary or (), parser if isinstance(parser, str) else None)
    summary = StreamSummary(req.summary or ())
    cur, decoder, pending, fed, from_offset = decoder_at_start(conn, req, spec, on_cursor, start)
    if req.to is not None and req.to < from_offset:
        raise InvalidArgument(messages.READ_SUMMARY_BAD_TO.format(to=req.to, start=from_offset))
    decoder.rejected = []
    skipped_before = decoder.bytes_skipped
    filtered_before = decoder.frames_filtered
    decode_feed.fold(decoder, list(pending), summary)  # decoded by an earlier read, not returned
    end = req.to
    deadline = time.monotonic() + req.timeout_ms / 1000
    feeder = decode_feed.Feeder(decoder, summary)
    silence = spec.silence_s(conn.settings.baud_rate)
    told_quiet_at: int | None = None
    lost = 0
    event_end: int | None = None
    stop: StopReason | None = None
    seq0 = conn.events.last_seq
    try:
        while stop is None:
            seen = conn.rx_end()  # with until: bytes the event watch has looked at, never more
            cut = None if req.until is None else await _until_end(conn, req, from_offset, seen, seq0)
            if cut is not None:
                end, event_end = (cut if end is None else min(end, cut)), cut
            if end is None and time.monotonic() >= deadline:
                end = conn.rx_end()  # what arrived by the deadline is counted, whatever decoding costs
            if end is not None and fed >= end:
                if end == event_end:
                    stop = "event"
                else:
                    stop = "to" if req.to is not None and fed >= req.to else "timeout"
                break
            want = FEED_CHUNK if end is None else min(FEED_CHUNK, end - fed)
            if req.until is not None:
                want = min(want, seen - fed)
            rr = conn.read_ring(fed, want)
            if rr.bytes_lost:  # evicted before it was read: counted as lost, the decoder restarts
                lost += rr.bytes_lost
                decoder.reset(rr.from_offset)
                if summary.first_offset is None:
                    from_offset = rr.from_offset
            fed = rr.next_offset
            if rr.data:
                _, used = await feeder.feed(rr.data, math.inf, 1)  # a window is decoded whole
                fed = rr.from_offset + used
                continue
            if rr.bytes_lost:
                continue
            wake_in = silence_due(conn, silence, decoder, fed, told_quiet_at)
            if wake_in is not None and wake_in <= 0:
                told_quiet_at = fed
                decode_feed.fold(decoder, decoder.silence(), summary)
                continue
            stop = await wait_or_stop(conn, fed, deadline, req.idle_ms, summary.frames > 0, wake_in)
            feeder.rested()
        summary.add_pending(decoder.damaged_frame(), decoder.pending_start, fed - decoder.pending_start)
    finally:
        decoder.rejected = None
    next_offset = max(decoder.pending_start, from_offset)
    if cur is not None:
        with conn.thread_lock:
            cur.offset, cur.fed, cur.pending = next_offset, fed, []
    return outcome(conn, from_offset, next_offset, lost, stop, req.cursor if on_cursor else None)._replace(
        summary=_timed(conn, summary.as_dict(decoder.bytes_skipped - skipped_before)),
        frames_filtered=decoder.frames_filtered - filtered_before,  # lines a print filter hid, not counted
    )


async def _until_end(conn: Connection, req: ReadRequest, begin: int, seen: int, seq0: int) -> int | None:
    """With ``until``: where the window ends (after the first such event's line and line end), once
    the event watch has found it among the bytes up to ``seen``; None until then."""
    cut = await until_cut(conn, req, begin, seq0, seen - begin)
    if cut is None:
        return None
    after = conn.read_ring(begin + cut, 2)
    tail = bytearray(after.data) if after.from_offset == begin + cut else bytearray()
    return begin + cut + past_line_end(tail, 0)


def _timed(conn: Connection, out: dict[str, Any]) -> dict[str, Any]:
    """The summary with the arrival time of its first and last frame and the rate between them."""
    first, last = out.get("first_offset"), out.get("last_offset")
    if first is None or last is None:
        return out
    t0, t1 = conn.time_at(first), conn.time_at(max(first, last - 1))
    if t0 is not None and t1 is not None:
        out["first_t"], out["last_t"] = round(t0, 3), round(t1, 3)
        span = t1 - t0
        out["seconds"] = round(span, 3)
        if span > 0:
            out["rate_per_s"] = round((out["frames"] + out["bad"]) / span, 2)
    return out
