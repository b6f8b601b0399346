"""The reads that decode: a framed read (``read_framed``: frames, decoded with state kept on the
cursor) and ``read(summary=true)`` (``read_summary``: a window's summary, not its frames).

A framed read's decoder lives with its cursor, so a frame torn across two reads (or two pump chunks)
is decoded whole next time; changing the framing resets it.

A summary's window is the read's: from ``from`` (the cursor by default) to ``to`` (an offset: a window of
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
from serial_mcp.core.decode import DecodedFrame
from serial_mcp.core.framing.base import FramingError
from serial_mcp.core.summary import StreamSummary, check_fields
from serial_mcp.errors import InvalidArgument
from serial_mcp.serial import decode_feed
from serial_mcp.serial.read_request import (
    FEED_CHUNK,
    REJECTED_KEPT,
    DecodeSpec,
    ReadOutcome,
    ReadRequest,
    StopReason,
    advance_cursor,
    outcome,
    past_line_end,
    resolve_start,
    until_cut,
    wait_or_stop,
)
from serial_mcp.serial.reply_window import reply_cut

if TYPE_CHECKING:
    from serial_mcp.core.cursors import Cursor
    from serial_mcp.core.decode import StreamDecoder
    from serial_mcp.serial.connection import Connection

__all__ = ["read_framed", "read_summary"]


async def read_framed(conn: Connection, req: ReadRequest, spec: DecodeSpec, start: int | None) -> ReadOutcome:
    """A read that returns frames. Decoder state lives with the cursor, so a frame torn across two
    reads (or two pump chunks) is decoded whole next time; changing the framing resets it."""
    on_cursor = req.from_ == "cursor" and start is None
    cur, decoder, pending, fed, from_offset = decoder_at_start(conn, req, spec, on_cursor, start)
    dropped_before = decoder.frames_dropped
    skipped_before = decoder.bytes_skipped
    filtered_before = decoder.frames_filtered
    rejected: list[DecodedFrame] = []
    decoder.rejected = rejected  # frames validate drops, named in the result (the first few)
    deadline = time.monotonic() + req.timeout_ms / 1000
    idle = req.effective_idle_ms
    silence = spec.silence_s(conn.settings.baud_rate)
    told_quiet_at: int | None = None  # the stream end at which the decoder last heard a silence
    decoded = False  # something was fed in this read (the deadline then ends it, whatever comes)
    feeder = decode_feed.Feeder(decoder)
    frames: list[DecodedFrame] = []
    size = 0
    lost = 0
    error: str | None = None
    match_index: int | None = None
    stop: StopReason | None = None
    seq0 = conn.events.last_seq
    watch = req.reply_watch()  # a transact that named no end: its reply's echo and final
    packet = watch if spec.packet_frames else None  # a packet protocol's reply is one frame
    while stop is None:
        while pending and stop is None:  # frames decoded earlier (or just now) come first
            event = pending.pop(0)
            if isinstance(event, FramingError):
                stop, error = "framing_error", event.message
                break
            frames.append(event)
            size += decode_feed.frame_size(event)
            if req.matcher is not None and req.matcher.find(event.data) is not None:
                stop, match_index = "match", len(frames) - 1
            elif event.final:
                stop = "final"
            elif len(frames) >= req.max_frames:
                stop = "max_frames"
            elif size >= req.max_bytes:
                stop = "max_bytes"
            elif packet is not None and packet.is_reply_frame(conn, from_offset, event.start, event.end):
                stop = "final"
        if stop is None and rejected and rejected[-1].final:
            stop = "final"  # issue 37: a reply that failed its check ends its exchange too
        if stop is not None:
            break
        if (
            req.until is not None
            and (cut := await until_cut(conn, req, from_offset, seq0, fed - from_offset)) is not None
        ):
            end = from_offset + cut
            keep = next((i for i, f in enumerate(frames) if f.start >= end), len(frames))
            pending[:0] = frames[keep:]  # frames after the event stay for the next read
            del frames[keep:]
            stop = "event"
            break
        if decoded and time.monotonic() >= deadline:
            stop = "timeout"  # bytes that keep the decoder busy (a flood, noise) end at the deadline too
            break
        rr = conn.read_ring(fed, FEED_CHUNK)
        if rr.bytes_lost:  # the ring overran this reader: the decoder cannot bridge a gap
            lost += rr.bytes_lost
            decoder.reset(rr.from_offset)
            if not frames:
                from_offset = rr.from_offset
        fed = rr.next_offset
        if rr.data:  # decoded on the loop if small, else in a worker thread, in pieces
            events, used = await feeder.feed(rr.data, deadline, req.max_frames - len(frames))
            pending.extend(events)
            fed = rr.from_offset + used
            decoded = True
        if rr.data or rr.bytes_lost:
            continue
        wake_in = silence_due(conn, silence, decoder, fed, told_quiet_at)
        if wake_in is not None and wake_in <= 0:  # a frame that ends at a silence (RTU, a prompt) ends now
            told_quiet_at, wake_in = fed, None
            events = decoder.silence()
            if events:
                pending.extend(events)
                continue
        have = bool(frames) and (watch is None or watch.see_ring(conn, from_offset, fed))
        stop = await wait_or_stop(conn, fed, deadline, idle, have, wake_in)
        feeder.rested()
        del rejected[REJECTED_KEPT:]
    decoder.rejected = None
    del rejected[REJECTED_KEPT:]
    if error is None and (damaged := decoder.damaged_pending()) is not None:  # issue 37: never silent
        error = messages.S_DAMAGED_PENDING.format(offset=damaged)

    next_offset = (
        frames[-1].end if pending and frames else (from_offset if pending else decoder.pending_start)
    )
    next_offset = max(next_offset, from_offset)
    if cur is not None:
        with conn.thread_lock:
            cur.offset, cur.fed, cur.pending = next_offset, fed, pending
    advanced = advance_cursor(conn, req, start, next_offset) if not on_cursor else req.cursor
    frames_skipped = 0
    if req.reply is not None and req.matcher is not None and frames:  # only the match (and N bytes before)
        frames_skipped = reply_cut(frames, match_index, req.reply)
        del frames[:frames_skipped]
        if match_index is not None:
            match_index -= frames_skipped
    times = [conn.time_at(f.end - 1) for f in frames]
    return outcome(conn, from_offset, next_offset, lost, stop, advanced)._replace(
        frames=frames,
        frame_times=times,
        frames_dropped=decoder.frames_dropped - dropped_before,
        bytes_skipped=decoder.bytes_skipped - skipped_before,
        error=error,
        match_frame=match_index,
        rejected=rejected or None,
        frames_skipped=frames_skipped,
        frames_filtered=decoder.frames_filtered - filtered_before,
    )


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


def decoder_at_start(
    conn: Connection, req: ReadRequest, spec: DecodeSpec, on_cursor: bool, start: int | None
) -> tuple[Cursor | None, StreamDecoder, list[Any], int, int]:
    """Where a framed read starts and the decoder it feeds: on a cursor, the cursor's own decoder
    (a new one if the framing changed), its pending bytes and how far it has fed; elsewhere a fresh
    decoder at the start. Returns ``(cursor or None, decoder, pending, fed, from_offset)``."""
    if on_cursor:
        with conn.thread_lock:
            cur = conn.rx.cursor(req.cursor)
            if cur.decoder is None or cur.decoder_key != spec.key:
                cur.drop_decoder()
                cur.decoder, cur.decoder_key = spec.new_decoder(cur.offset), spec.key
            return cur, cur.decoder, cur.pending, cur.fed, cur.offset
    from_offset = resolve_start(conn, req) if start is None else start
    return None, spec.new_decoder(from_offset), [], from_offset, from_offset


def silence_due(
    conn: Connection, silence: float | None, decoder: StreamDecoder, fed: int, told: int | None
) -> float | None:
    """Seconds until the decoder must hear that the line went quiet (≤ 0: now), or None when no
    silence is due: none asked for, nothing pending, or already told at ``fed``."""
    if silence is None or decoder.pending_start >= fed or told == fed:
        return None
    last = conn.snapshot().last_rx_time
    return silence - (0.0 if last is None else time.time() - last)
