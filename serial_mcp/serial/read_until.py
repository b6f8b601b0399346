"""Where a read starts and where it stops: the start offset (``resolve_start``) and decoder
(``decoder_at_start``), the wait for more (``wait_or_stop``), a silence a decoder must hear about
(``silence_due``), and ``read(until=[...])``: the event kinds a read ends on, and where (issue 24).

A read with ``until`` ends on the first event of those kinds that ends after its start, or that the
connection's event watch found while it ran (its bytes were read, by an earlier read, before it was
complete): at the end of that event's lines and their line end. ``reset`` also ends on a boot: a reset
nobody announced (a watchdog, a brownout, the button) only shows as the next boot.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from serial_mcp import messages
from serial_mcp.errors import InvalidArgument
from serial_mcp.serial.read_request import ReadOutcome

if TYPE_CHECKING:
    from serial_mcp.core.cursors import Cursor
    from serial_mcp.core.decode import StreamDecoder
    from serial_mcp.serial.connection import Connection
    from serial_mcp.serial.read_request import DecodeSpec, ReadRequest, StopReason

__all__ = [
    "decoder_at_start",
    "outcome",
    "past_line_end",
    "resolve_start",
    "silence_due",
    "until_cut",
    "wait_or_stop",
]


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


def resolve_start(conn: Connection, req: ReadRequest) -> int:
    """The absolute offset a read starts at (creates a named cursor on first use)."""
    snap = conn.snapshot()
    if req.from_ == "cursor":
        with conn.thread_lock:
            return conn.rx.cursor(req.cursor).offset
    if req.from_ == "now":
        return snap.end_offset
    if req.from_ == "buffer_start":
        return snap.start_offset
    assert isinstance(req.from_, int)
    if req.from_ > snap.end_offset:
        raise InvalidArgument(messages.READ_FROM_FUTURE.format(value=req.from_, end=snap.end_offset))
    return req.from_


async def wait_or_stop(
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


def silence_due(
    conn: Connection, silence: float | None, decoder: StreamDecoder, fed: int, told: int | None
) -> float | None:
    """Seconds until the decoder must hear that the line went quiet (≤ 0: now), or None when no
    silence is due: none asked for, nothing pending, or already told at ``fed``."""
    if silence is None or decoder.pending_start >= fed or told == fed:
        return None
    last = conn.snapshot().last_rx_time
    return silence - (0.0 if last is None else time.time() - last)


def outcome(
    conn: Connection, begin: int, end: int, lost: int, stop: StopReason, cursor: str | None
) -> ReadOutcome:
    """A read's result over ``[begin, end)`` after ``lost`` bytes (counted on the connection too);
    the callers add what their kind of read returns (``_replace``)."""
    conn.bytes_lost_total += lost
    return ReadOutcome(begin, end, lost, stop, max(0, conn.rx_end() - end), cursor)


async def until_cut(conn: Connection, req: ReadRequest, begin: int, seq0: int, have: int) -> int | None:
    """``_event_cut``, once the event watch has looked at the bytes this read holds (a bounded wait: it
    waits only when the watch is close behind): a read over history ends on its events, not before."""
    cut = _event_cut(conn, req, begin, seq0, have)
    if cut is None and conn.events.scanned_to < begin + have:
        await conn.events.settle(begin + have)
        cut = _event_cut(conn, req, begin, seq0, have)
    return cut


def _event_cut(conn: Connection, req: ReadRequest, begin: int, seq0: int, have: int) -> int | None:
    """Where an ``until`` read ends: the number of its bytes to keep (the event's lines and their line
    end), or None while no such event has been found. An event that ended before ``begin`` but was
    found during this read (its bytes were read before it was complete) ends the read as it stands."""
    assert req.until is not None
    hit = conn.events.first(req.until, begin, seq0)
    if hit is None:
        return None
    cut = hit.event.end - begin
    if cut <= 0:
        return have
    if cut > have:
        return None  # its last bytes are not in this read yet
    return cut


def past_line_end(buf: bytearray, cut: int) -> int:
    """``cut`` moved past the line end that follows it (CR, LF or CRLF), when it is in ``buf``."""
    if buf[cut : cut + 2] == b"\r\n":
        return cut + 2
    return cut + 1 if cut < len(buf) and buf[cut] in (0x0D, 0x0A) else cut
