"""The read algorithm: gather bytes from a cursor or offset until a stop condition, without polling.

Stop conditions, first one wins: ``match`` found, ``max_bytes`` gathered, the line quiet for
``idle_ms`` after data arrived, ``timeout_ms`` elapsed, the port disconnected or closed. History is
checked before waiting, so a reply that already arrived is found at once. What a read returns is
always one contiguous run ``[from_offset, next_offset)`` plus the bytes lost before it.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from serial_mcp import messages
from serial_mcp.core.cursors import DEFAULT_CURSOR
from serial_mcp.core.decode import DecodedFrame, StreamDecoder
from serial_mcp.core.encoding import ENCODINGS, utf8_complete_length
from serial_mcp.core.framing.base import FramingError
from serial_mcp.core.match import Matcher, Span
from serial_mcp.errors import ErrorCode, InvalidArgument, SerialMcpError, Short
from serial_mcp.serial import decode_feed
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.lending import released_error
from serial_mcp.serial.pattern_search import search_in_worker, search_inline
from serial_mcp.serial.read_until import past_line_end, until_cut, until_kinds
from serial_mcp.serial.reply_window import reply_cut as _reply_cut
from serial_mcp.serial.reply_window import reply_start as _reply_start

DEFAULT_TIMEOUT_MS = 1000
MAX_TIMEOUT_MS = 600_000
DEFAULT_IDLE_MS = 100
DEFAULT_MAX_BYTES = 65536
MAX_MAX_BYTES = 4 * 1024 * 1024

StopReason = Literal[
    "match",
    "final",
    "max_bytes",
    "max_frames",
    "idle",
    "timeout",
    "disconnected",
    "closed",
    "overrun",
    "framing_error",
    "event",
    "to",  # a summary reached its window's end (issue 26)
]
DEFAULT_MAX_FRAMES = 100
REJECTED_KEPT = 8  # bad frames a framed read names (their count stays exact in frames_dropped)
MAX_MAX_FRAMES = 10_000
FEED_CHUNK = 64 * 1024
DEFAULT_RX_FRAMING: dict[str, Any] = {"type": "line", "ending": "auto"}


@dataclass(frozen=True, slots=True)
class DecodeSpec:
    """Resolved RX framing + parser for a framed read; ``key`` identifies it for cursor state."""

    rx_framing: Any
    rx_parser: Any
    key: str

    def new_decoder(self, offset: int) -> StreamDecoder:
        return StreamDecoder(self.rx_framing, self.rx_parser, offset)

    @property
    def final_aware(self) -> bool:
        """The parser knows what ends an exchange (AT result codes, grbl ok/error, a shell prompt,
        a REPL's ``>``): a read then ends on that final, not on a short silence."""
        return _type_of(self.rx_parser) in FINAL_AWARE_PARSERS

    def silence_s(self, baud_rate: int) -> float | None:
        """How long the line must be quiet before the decoder is told so (``StreamDecoder.silence``):
        Modbus RTU's 3.5 characters; a console's unterminated prompt once output pauses."""
        if _type_of(self.rx_framing) == "modbus_rtu":
            from serial_mcp.core.framing.modbus_rtu import silence_seconds

            return max(silence_seconds(baud_rate), MIN_SILENCE_S)
        if _type_of(self.rx_parser) == "shell_prompt":
            return PROMPT_QUIET_S
        return None


FINAL_AWARE_PARSERS = frozenset({"at_command", "grbl", "shell_prompt", "micropython", "modbus_rtu"})
PROMPT_QUIET_S = 0.05  # a prompt is the unterminated tail once the console has been quiet this long
MIN_SILENCE_S = 0.005  # USB adapters' latency timers blur shorter gaps


def _type_of(spec: Any) -> str | None:
    kind = spec.get("type") if isinstance(spec, dict) else None
    return kind if isinstance(kind, str) else None


def build_decode_spec(rx_framing: Any, rx_parser: Any) -> DecodeSpec | None:
    """Validate a framing/parser pair (building it once); None means a raw byte read."""
    if rx_framing is None and rx_parser is None:
        return None
    framing = DEFAULT_RX_FRAMING if rx_framing is None else rx_framing
    StreamDecoder(framing, rx_parser, 0)  # raises InvalidArgument with the exact field at fault
    return DecodeSpec(framing, rx_parser, json.dumps([framing, rx_parser], sort_keys=True, default=str))


From = int | Literal["cursor", "now", "buffer_start"]


class ReadRequest(NamedTuple):
    """A validated read: where to start, when to stop, how to render."""

    from_: From = "cursor"
    cursor: str = DEFAULT_CURSOR
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    idle_ms: int | None = None
    max_bytes: int = DEFAULT_MAX_BYTES
    matcher: Matcher | None = None
    encoding: str = "utf8"
    decode: DecodeSpec | None = None
    max_frames: int = DEFAULT_MAX_FRAMES
    until: frozenset[str] | None = None  # event kinds that end the read (issue 24)
    summary: tuple[str, ...] | None = None  # a summary read (issue 26): the numeric fields named
    to: int | None = None  # a summary's window ends at this offset
    reply: int | None = None  # reply="match" (0) / "tail:N": return the match and N bytes before it

    @property
    def effective_idle_ms(self) -> int | None:
        """Silence that ends a read: explicit, or a short default for a plain read without ``match``
        — but never before the final when the parser knows what a final looks like."""
        if self.idle_ms is not None:
            return self.idle_ms
        if self.matcher is not None or self.until or (self.decode is not None and self.decode.final_aware):
            return None
        return DEFAULT_IDLE_MS


def _is_int(value: object) -> bool:
    """A whole number, and not a boolean (``True`` is an ``int`` to Python, never a count or a time)."""
    return isinstance(value, int) and not isinstance(value, bool)


def build_read_request(
    *,
    from_: Any = "cursor",
    cursor: str | None = None,
    timeout_ms: int | None = None,
    idle_ms: int | None = None,
    max_bytes: int | None = None,
    match: Any = None,
    encoding: str | None = None,
    decode: DecodeSpec | None = None,
    max_frames: int | None = None,
    until: Any = None,
    summary: tuple[str, ...] | None = None,
    to: int | None = None,
    reply: int | None = None,
) -> ReadRequest:
    """Validate every read argument up front (``transact`` calls this before it writes anything)."""
    if from_ is None:
        from_ = "cursor"
    if isinstance(from_, bool) or not (
        from_ in ("cursor", "now", "buffer_start") or (isinstance(from_, int) and from_ >= 0)
    ):
        if isinstance(from_, str) and from_.isdigit():
            from_ = int(from_)
        else:
            raise InvalidArgument(messages.READ_BAD_FROM.format(value=Short(from_)))
    t = DEFAULT_TIMEOUT_MS if timeout_ms is None else timeout_ms
    if not _is_int(t) or not 0 <= t <= MAX_TIMEOUT_MS:
        raise InvalidArgument(messages.READ_BAD_TIMEOUT.format(value=Short(t), max=MAX_TIMEOUT_MS))
    if idle_ms is not None and (not _is_int(idle_ms) or not 1 <= idle_ms <= MAX_TIMEOUT_MS):
        raise InvalidArgument(messages.READ_BAD_IDLE.format(value=Short(idle_ms), max=MAX_TIMEOUT_MS))
    mb = DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
    if not _is_int(mb) or not 1 <= mb <= MAX_MAX_BYTES:
        raise InvalidArgument(messages.READ_BAD_MAX_BYTES.format(value=Short(mb), max=MAX_MAX_BYTES))
    enc = encoding or "utf8"
    if enc not in ENCODINGS:
        raise InvalidArgument(
            messages.BAD_ENCODING.format(field="encoding", value=Short(enc), allowed=", ".join(ENCODINGS))
        )
    mf = DEFAULT_MAX_FRAMES if max_frames is None else max_frames
    if not _is_int(mf) or not 1 <= mf <= MAX_MAX_FRAMES:
        raise InvalidArgument(messages.READ_BAD_MAX_FRAMES.format(value=Short(mf), max=MAX_MAX_FRAMES))
    matcher = Matcher.from_spec(match) if match is not None else None
    kinds = until_kinds(until)
    return ReadRequest(
        from_, cursor or DEFAULT_CURSOR, t, idle_ms, mb, matcher, enc, decode, mf, kinds, summary, to, reply
    )


class ReadOutcome(NamedTuple):
    """The raw result of a read; the MCP layer renders it."""

    data: bytes
    from_offset: int
    next_offset: int
    bytes_lost: int
    stop_reason: StopReason
    buffered_remaining: int
    match: Span | None  # relative to ``data``
    cursor: str | None  # the cursor that was advanced, if any
    frames: list[DecodedFrame] | None = None  # framed reads only
    frame_times: list[float | None] | None = None  # arrival time of each frame's last byte
    frames_dropped: int | None = None
    bytes_skipped: int | None = None  # framed reads: bytes that went into no frame (garbage, resync)
    error: str | None = None
    match_frame: int | None = None  # index of the frame that matched
    summary: dict[str, Any] | None = None  # a summary read: the window's summary (core/summary.py)
    rejected: list[DecodedFrame] | None = None  # framed reads: the first bad frames validate dropped
    frames_skipped: int = 0  # a framed reply read: frames consumed before the ones returned


def resolve_start(conn: Connection, req: ReadRequest) -> int:
    """The absolute offset a read starts at (creates a named cursor on first use)."""
    snap = conn.snapshot()
    if req.from_ == "cursor":
        with conn.thread_lock:
            return conn.cursors.get(req.cursor, snap.start_offset).offset
    if req.from_ == "now":
        return snap.end_offset
    if req.from_ == "buffer_start":
        return snap.start_offset
    assert isinstance(req.from_, int)
    if req.from_ > snap.end_offset:
        raise InvalidArgument(messages.READ_FROM_FUTURE.format(value=req.from_, end=snap.end_offset))
    return req.from_


async def _wait_or_stop(
    conn: Connection,
    seen_end: int,
    deadline: float,
    idle: int | None,
    have: bool,
    wake_in: float | None = None,
) -> StopReason | None:
    """Nothing new past ``seen_end``: say why the read ends, or sleep until something changes
    (at most ``wake_in`` seconds: a silence the decoder must hear about)."""
    snap = conn.snapshot()
    if snap.end_offset > seen_end:
        return None  # more arrived while we worked
    if snap.state in ("closed", "disconnected"):
        return snap.state
    # "reconnecting": keep waiting; the timeout still holds and a reconnect wakes us
    wait = deadline - time.monotonic()
    if idle is not None and have and snap.last_rx_time is not None:
        quiet = time.time() - snap.last_rx_time
        if quiet * 1000 >= idle:
            return "idle"
        wait = min(wait, idle / 1000 - quiet)
    if wait <= 0:
        return "timeout"
    if wake_in is not None:
        wait = min(wait, max(wake_in, 0.001))
    await conn.wait_change(wait, snap.end_offset)
    return None


def _require_not_closed(conn: Connection) -> None:
    if conn.state == "released":
        raise released_error(conn)
    if conn.state == "closed":
        raise SerialMcpError(ErrorCode.CONNECTION_CLOSED, messages.CONNECTION_CLOSED.format(id=conn.id))


async def read(conn: Connection, req: ReadRequest, start: int | None = None) -> ReadOutcome:
    """Run one read. ``start`` overrides ``req.from_`` (``transact`` passes its pre-write mark).

    A read that consumes a cursor holds it until it returns: concurrent reads on one cursor run
    one after another, never returning the same bytes twice."""
    _require_not_closed(conn)
    if req.from_ != "cursor":
        return await _read(conn, req, start)
    async with conn.reading(req.cursor, req.timeout_ms / 1000):
        return await _read(conn, req, start)


wait_or_stop = _wait_or_stop  # for summary_read


async def _read(conn: Connection, req: ReadRequest, start: int | None) -> ReadOutcome:
    if req.summary is not None:
        from serial_mcp.serial.summary_read import read_summary

        spec = req.decode or build_decode_spec(DEFAULT_RX_FRAMING, None)
        assert spec is not None
        return await read_summary(conn, req, spec, start)
    if req.decode is not None:
        return await _read_framed(conn, req, req.decode, start)
    if req.from_ == "cursor" and start is None:
        with conn.thread_lock:
            cur = conn.cursors.get(req.cursor, conn.ring.start_offset)
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
        if len(buf) >= req.max_bytes:
            stop = "max_bytes"
            break
        stop = await _wait_or_stop(conn, from_offset + len(buf), deadline, idle, bool(buf))

    conn.bytes_lost_total += lost
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
    return ReadOutcome(
        data=data,
        from_offset=from_offset + skipped,
        next_offset=next_offset,
        bytes_lost=lost,
        stop_reason=stop,
        buffered_remaining=max(0, conn.rx_end() - next_offset),
        match=span,
        cursor=advanced,
        bytes_skipped=skipped or None,
    )


def _advance_cursor(conn: Connection, req: ReadRequest, start: int | None, next_offset: int) -> str | None:
    """A plain cursor read consumes what it returned; transact (explicit start) moves it past the reply."""
    if req.from_ != "cursor":
        return None
    with conn.thread_lock:
        cur = conn.cursors.get(req.cursor, conn.ring.start_offset)
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
    if on_cursor:
        with conn.thread_lock:
            cur = conn.cursors.get(req.cursor, conn.ring.start_offset)
            if cur.decoder is None or cur.decoder_key != spec.key:
                cur.drop_decoder()
                cur.decoder, cur.decoder_key = spec.new_decoder(cur.offset), spec.key
            decoder, pending, fed, from_offset = cur.decoder, cur.pending, cur.fed, cur.offset
    else:
        from_offset = resolve_start(conn, req) if start is None else start
        decoder, pending, fed = spec.new_decoder(from_offset), [], from_offset
    dropped_before = decoder.frames_dropped
    skipped_before = decoder.bytes_skipped
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
        wake_in: float | None = None
        if silence is not None and decoder.pending_start < fed and told_quiet_at != fed:
            last = conn.snapshot().last_rx_time
            quiet = 0.0 if last is None else time.time() - last
            if quiet >= silence:  # a frame that ends at a silence (RTU, a console's prompt) ends now
                told_quiet_at = fed
                events = decoder.silence()
                if events:
                    pending.extend(events)
                    continue
            else:
                wake_in = silence - quiet
        stop = await _wait_or_stop(conn, fed, deadline, idle, bool(frames), wake_in)
        feeder.rested()
        del rejected[REJECTED_KEPT:]
    decoder.rejected = None
    del rejected[REJECTED_KEPT:]

    next_offset = (
        frames[-1].end if pending and frames else (from_offset if pending else decoder.pending_start)
    )
    next_offset = max(next_offset, from_offset)
    if on_cursor:
        with conn.thread_lock:
            cur.offset, cur.fed, cur.pending = next_offset, fed, pending
    advanced = _advance_cursor(conn, req, start, next_offset) if not on_cursor else req.cursor
    conn.bytes_lost_total += lost
    frames_skipped = 0
    if req.reply is not None and req.matcher is not None and frames:  # only the match (and N bytes before)
        frames_skipped = _reply_cut(frames, match_index, req.reply)
        del frames[:frames_skipped]
        if match_index is not None:
            match_index -= frames_skipped
    times = [conn.time_at(f.end - 1) for f in frames]
    return ReadOutcome(
        data=b"",
        from_offset=from_offset,
        next_offset=next_offset,
        bytes_lost=lost,
        stop_reason=stop,
        buffered_remaining=max(0, conn.rx_end() - next_offset),
        match=None,
        cursor=advanced,
        frames=frames,
        frame_times=times,
        frames_dropped=decoder.frames_dropped - dropped_before,
        bytes_skipped=decoder.bytes_skipped - skipped_before,
        error=error,
        match_frame=match_index,
        rejected=rejected or None,
        frames_skipped=frames_skipped,
    )

