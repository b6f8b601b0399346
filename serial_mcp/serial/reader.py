"""The read algorithm: gather bytes from a cursor or offset until a stop condition, without polling.

Stop conditions, first one wins: ``match`` found, ``max_bytes`` gathered, the line quiet for
``idle_ms`` after data arrived, ``timeout_ms`` elapsed, the port disconnected or closed. History is
checked before waiting, so a reply that already arrived is found at once. What a read returns is
always one contiguous run ``[from_offset, next_offset)`` plus the bytes lost before it.
"""

from __future__ import annotations

import time

from serial_mcp import messages
from serial_mcp.core.decode import DecodedFrame
from serial_mcp.core.encoding import utf8_complete_length
from serial_mcp.core.framing.base import FramingError
from serial_mcp.core.match import Span
from serial_mcp.errors import ErrorCode, PortError
from serial_mcp.serial import decode_feed
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.event_start import pin_event_start
from serial_mcp.serial.lending import released_error
from serial_mcp.serial.pattern_search import search_in_worker, search_inline
from serial_mcp.serial.read_request import (
    DEFAULT_RX_FRAMING,
    FEED_CHUNK,
    MAX_MAX_BYTES,
    MAX_TIMEOUT_MS,
    REJECTED_KEPT,
    DecodeSpec,
    ReadOutcome,
    ReadRequest,
    StopReason,
    build_decode_spec,
    build_read_request,
)
from serial_mcp.serial.read_until import (
    decoder_at_start,
    outcome,
    past_line_end,
    resolve_start,
    silence_due,
    until_cut,
    wait_or_stop,
)
from serial_mcp.serial.reply_window import reply_cut as _reply_cut
from serial_mcp.serial.reply_window import reply_start as _reply_start
from serial_mcp.serial.summary_read import read_summary

__all__ = [  # the request side lives in read_request; these are imported from here as before
    "MAX_MAX_BYTES",
    "MAX_TIMEOUT_MS",
    "DecodeSpec",
    "ReadOutcome",
    "ReadRequest",
    "build_decode_spec",
    "build_read_request",
    "read",
    "resolve_start",
]


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
        return await _read_framed(conn, req, req.decode, start)
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
    advanced = _advance_cursor(conn, req, start, next_offset)
    skipped = 0
    if req.reply is not None and req.matcher is not None:  # reply="match"/"tail:N": the rest is counted
        skipped = _reply_start(data, span, req.reply)
        data = data[skipped:]
        if req.encoding == "utf8":
            while skipped < next_offset - from_offset and data[:1] and 0x80 <= data[0] < 0xC0:
                data, skipped = data[1:], skipped + 1  # never start inside a character
        if span is not None:
            span = Span(span.start - skipped, span.end - skipped)
    result = outcome(conn, from_offset + skipped, next_offset, lost, stop, advanced)
    return result._replace(data=data, match=span, bytes_skipped=skipped or None)


def _advance_cursor(conn: Connection, req: ReadRequest, start: int | None, next_offset: int) -> str | None:
    """A plain cursor read consumes what it returned; transact (explicit start) moves it past the reply."""
    if req.from_ != "cursor":
        return None
    with conn.thread_lock:
        cur = conn.rx.cursor(req.cursor)
        if start is None:
            cur.offset = next_offset
        elif next_offset > cur.offset:
            cur.offset = next_offset
            cur.drop_decoder()
    return req.cursor


async def _read_framed(
    conn: Connection, req: ReadRequest, spec: DecodeSpec, start: int | None
) -> ReadOutcome:
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
    advanced = _advance_cursor(conn, req, start, next_offset) if not on_cursor else req.cursor
    frames_skipped = 0
    if req.reply is not None and req.matcher is not None and frames:  # only the match (and N bytes before)
        frames_skipped = _reply_cut(frames, match_index, req.reply)
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
