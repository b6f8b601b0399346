"""Helpers the tool modules share: codec resolution, payloads, writes, and result shaping."""

from __future__ import annotations

import bisect
from datetime import UTC, datetime
from typing import Any

import anyio

from serial_mcp import messages
from serial_mcp.core import ansi
from serial_mcp.core.encoding import decode_input, encode_output
from serial_mcp.core.framing.config import build_encoder
from serial_mcp.core.pace import Pace, parse_pace
from serial_mcp.core.presets import Resolved, effective
from serial_mcp.core.screen import MAX_COLS, MAX_ROWS, MIN_SIZE, TerminalScreen
from serial_mcp.core.summary import bad_reason, excerpt
from serial_mcp.engine import results as models
from serial_mcp.engine.access import Caller
from serial_mcp.engine.options import CursorView, ReadWindow
from serial_mcp.errors import ErrorCode, InvalidArgument, OperationTimeout, PortError, SerialMcpError, Short
from serial_mcp.serial import reader
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.lending import released_error
from serial_mcp.serial.responder import Responder
from serial_mcp.serial.tx import (
    DEFAULT_STALL_MS,
    MAX_WRITE_TIMEOUT_MS,
    TxBusy,
    TxTurn,
    WriteOutcome,
    write_budget_s,
)


def codecs(
    conn: Connection,
    protocol: str | None = None,
    rx_framing: Any = None,
    tx_framing: Any = None,
    rx_parser: Any = None,
) -> Resolved:
    """The effective framing/parser for this call (call field → call preset → connection → its preset)."""
    unset = protocol is None and rx_framing is None and tx_framing is None and rx_parser is None
    if unset and conn.options.plain:  # the plain case of most calls: nothing to resolve
        return _PLAIN
    call = {"protocol": protocol, "rx_framing": rx_framing, "tx_framing": tx_framing, "rx_parser": rx_parser}
    return effective(call, conn.options.codecs())


_PLAIN = effective({}, {})  # no codec at any layer (frozen; its sources are never changed)


def decode_spec(resolved: Resolved) -> reader.DecodeSpec | None:
    return reader.build_decode_spec(resolved.rx_framing, resolved.rx_parser)


def read_request(
    conn: Connection,
    caller: Caller,
    opts: ReadWindow,
    *,
    from_: Any = None,
    encoding: str | None = None,
    default_timeout_ms: int | None = None,
    resolved: Resolved | None = None,
    summary: tuple[str, ...] | None = None,
    to: int | None = None,
) -> reader.ReadRequest:
    """The validated read of ``opts`` (the read window of read, transact or capture_boot): the one
    place its options become a ``ReadRequest``; a window without a cursor reads from ``from_``."""
    if resolved is None:
        resolved = codecs(conn, opts.protocol, opts.rx_framing, None, opts.rx_parser)
    timeout_ms = opts.timeout_ms if opts.timeout_ms is not None else default_timeout_ms
    reply = parse_reply(opts.reply, opts.match)
    return reader.build_read_request(
        from_=from_,
        cursor=caller.cursor(opts.cursor if isinstance(opts, CursorView) else None),
        timeout_ms=timeout_ms,
        idle_ms=opts.idle_ms,
        max_bytes=opts.max_bytes,
        match=opts.match,
        encoding=encoding,
        decode=decode_spec(resolved),
        max_frames=opts.max_frames,
        until=opts.until,
        summary=summary,
        to=to,
        reply=reply,
    )


MAX_REPLY_TAIL = 65536


def parse_reply(reply: str | None, match: Any) -> int | None:
    """``reply``: ``"match"`` → 0, ``"tail:N"`` → N bytes kept before the match; None → the whole read."""
    if reply is None:
        return None
    if match is None:
        raise InvalidArgument(messages.READ_REPLY_NEEDS_MATCH)
    if reply == "match":
        return 0
    head, _, count = reply.partition(":")
    if head == "tail" and count.isascii() and count.isdigit() and int(count) <= MAX_REPLY_TAIL:
        return int(count)
    raise InvalidArgument(messages.READ_BAD_REPLY.format(value=Short(reply), max=MAX_REPLY_TAIL))


def payload(data: str, encoding: str | None, tx_framing: Any = None) -> bytes:
    """The exact bytes to send: decoded from the tool's text, then framed (if a TX framing applies)."""
    raw = decode_input(data, encoding or "utf8")
    if tx_framing is not None:
        raw = build_encoder(tx_framing).encode(raw)
    if not raw:
        raise InvalidArgument(messages.WRITE_EMPTY)
    return raw


def pace_for(conn: Connection, pace: Any) -> Pace | None:
    """The call's pacing, else the connection default."""
    if pace is not None:
        return parse_pace(pace)
    return conn.options.pace


def require_open(conn: Connection) -> None:
    if conn.state == "released":
        raise released_error(conn)
    if conn.state != "open":
        raise PortError(
            ErrorCode.NOT_CONNECTED,
            messages.NOT_CONNECTED.format(
                id=conn.id,
                state=conn.state,
                error=conn.last_error or "-",
                advice=messages.NOT_CONNECTED_RECONNECTING
                if conn.state == "reconnecting"
                else messages.NOT_CONNECTED_GONE,
            ),
            connection_id=conn.id,
        )


def write_budget(conn: Connection, data: bytes, pace: Pace | None, timeout_ms: int | None) -> float:
    """The write's deadline in seconds (validated ``timeout_ms``, else the default plus wire time)."""
    if timeout_ms is not None and (
        isinstance(timeout_ms, bool)
        or not isinstance(timeout_ms, int)
        or not 1 <= timeout_ms <= MAX_WRITE_TIMEOUT_MS
    ):
        raise InvalidArgument(
            messages.WRITE_BAD_TIMEOUT.format(value=Short(timeout_ms), max=MAX_WRITE_TIMEOUT_MS)
        )
    return write_budget_s(len(data), conn.settings.baud_rate, pace, timeout_ms)


async def write(
    conn: Connection,
    data: bytes,
    pace: Pace | None = None,
    timeout_s: float | None = None,
    stall_s: float | None = None,
) -> WriteOutcome:
    """Queue behind earlier writes and write, all within ``timeout_s`` (default: ``write_budget``);
    the write ends early once the device took no byte for ``stall_s`` (default: the TX default)."""
    require_open(conn)
    budget = write_budget(conn, data, pace, None) if timeout_s is None else timeout_s
    deadline = anyio.current_time() + budget
    try:
        async with conn.tx.turn(budget):
            return await write_locked(conn, data, pace, max(0.0, deadline - anyio.current_time()), stall_s)
    except TxBusy:
        return WriteOutcome(0, timed_out=True)


def tx_turn(conn: Connection, data: bytes, budget: float) -> TxTurn:
    """The TX turn for a transact (``async with``): waiting longer than ``budget`` is ``write_timeout``."""
    return conn.tx.turn(budget, busy=lambda: _stopped(conn, data, budget, 0))


async def write_all(conn: Connection, data: bytes, pace: Pace | None, budget: float) -> int:
    """``write_locked`` for a transact: a write that stops at its deadline is ``write_timeout``
    (with the count that went out), and nothing is read."""
    out = await write_locked(conn, data, pace, budget)
    if out.timed_out:
        raise _stopped(conn, data, budget, out.bytes_written, out.stalled)
    return out.bytes_written


def _stopped(
    conn: Connection, data: bytes, budget: float, written: int, stalled: bool = False
) -> SerialMcpError:
    if stalled:
        text = messages.WRITE_STOPPED_STALLED.format(
            id=conn.id, ms=DEFAULT_STALL_MS, written=written, total=len(data)
        )
    else:
        text = messages.WRITE_STOPPED_TIMEOUT.format(
            id=conn.id, ms=round(budget * 1000), written=written, total=len(data)
        )
    return OperationTimeout(ErrorCode.WRITE_TIMEOUT, text)


async def write_locked(
    conn: Connection,
    data: bytes,
    pace: Pace | None = None,
    timeout_s: float | None = None,
    stall_s: float | None = None,
) -> WriteOutcome:
    """Write with the TX turn held; an OS error marks the connection lost and becomes ``io_error``;
    a device that stops taking data ends the write at its deadline (``timed_out``, bytes counted).

    The tx event is logged as the write starts, so a fast reply is never logged before its command.
    """
    budget = write_budget(conn, data, pace, None) if timeout_s is None else timeout_s
    try:
        out = await conn.send(data, pace, budget, stall_s)
    except TimeoutError as exc:
        raise OperationTimeout(
            ErrorCode.WRITE_TIMEOUT, messages.WRITE_TIMEOUT.format(id=conn.id), connection_id=conn.id
        ) from exc
    except OSError as exc:
        conn.note_write_error(exc)
        raise PortError(
            ErrorCode.IO_ERROR, messages.WRITE_FAILED.format(id=conn.id, error=exc), connection_id=conn.id
        ) from exc
    if out.closed:  # close() ended it: the port is gone, whatever the device did
        raise PortError(
            ErrorCode.CONNECTION_CLOSED, messages.CONNECTION_CLOSED.format(id=conn.id), connection_id=conn.id
        )
    return out


def summary(c: Connection) -> models.ConnectionSummary:
    return models.ConnectionSummary(
        connection_id=c.id,
        port=c.port,
        state=c.state,
        baud_rate=c.settings.baud_rate,
        rx_bytes=c.rx_end(),
        tx_bytes=c.tx.tx_bytes,
    )


def status(conn: Connection, caller: Caller | None = None) -> models.StatusResult:
    """The connection as ``caller`` sees it: its own default cursor as ``default``, other sessions'
    defaults left out."""
    caller = caller or Caller.local()
    start, end, evicted, positions = conn.rx.status()
    cursors = {
        shown: models.CursorStatus(
            offset=offset, unread=max(0, end - max(offset, start)), lost=max(0, start - offset)
        )
        for name, offset in positions
        if (shown := caller.shown_cursor(name)) is not None
    }
    lines: dict[str, bool | None] = {"cts": None, "dsr": None, "ri": None, "cd": None}
    if conn.state == "open":
        try:
            lines = conn.modem_lines()
        except OSError:
            pass
    opts = conn.options.as_dict()
    mirror, mine = conn.rfc2217, conn.owner == caller.key
    live = mirror.live_settings() if mirror is not None else None  # a mirror client set the port
    set_by = (
        messages.SETTINGS_BY_CLIENT.format(client=mirror.client)
        if mirror is not None and live is not None
        else messages.SETTINGS_BY_BORROWER
        if conn.lend is not None
        else None
    )
    return models.StatusResult(
        connection_id=conn.id,
        port=conn.port,
        state=conn.state,
        settings=(live or conn.settings).as_dict(),
        settings_by=set_by,
        own_settings=conn.settings.as_dict() if set_by is not None else None,
        rx_bytes=end,
        tx_bytes=conn.tx.tx_bytes,
        start_offset=start,
        end_offset=end,
        rx_buffer_size=conn.rx_buffer_size,
        cursors=cursors,
        bytes_lost_total=conn.bytes_lost_total,
        bytes_evicted=evicted,
        cts=lines.get("cts"),
        dsr=lines.get("dsr"),
        ri=lines.get("ri"),
        cd=lines.get("cd"),
        dtr=conn.dtr,
        rts=conn.rts,
        reconnect_attempts=conn.reconnect_attempts,
        reconnects=conn.reconnects,
        reconnect=conn.reconnect_policy.as_dict() if conn.reconnect_policy else None,
        low_latency=conn.low_latency(),
        defaults=opts,
        last_error=conn.last_error,
        opened_at=datetime.fromtimestamp(conn.opened_at, UTC).isoformat(),
        rfc2217=mirror.describe(owner=mine) if mirror is not None else None,  # its URL: the owner's alone
    )


def read_result(
    conn: Connection,
    o: reader.ReadOutcome,
    encoding: str,
    responder: Responder | None = None,
    *,
    strip_ansi: bool = False,
    view: str | None = None,
    verbose: bool = False,
) -> models.ReadResult:
    """Shape a read; ``view`` (frames=): ``raw`` drops parsed fields, ``parsed`` drops the raw text of
    frames that were parsed (the cheap forms), ``both`` (default) keeps both."""
    if view not in (None, "both", "raw", "parsed"):
        raise InvalidArgument(messages.FRAMES_VIEW_BAD.format(value=str(view)[:80]))
    stripped = 0
    data = o.data
    if strip_ansi:
        data, stripped = ansi.strip_ansi(data)
    text, used = encode_output(data, encoding)
    frames: list[models.Frame] | None = None
    if o.frames is not None:
        times = o.frame_times or [None] * len(o.frames)
        frames = []
        # one encoding per read (issue 26): a read whose frames are not all text gives them all in hex,
        # not utf8 for one frame and hex for the next
        frame_encoding = encoding if encoding != "utf8" or all(_is_text(f.data) for f in o.frames) else "hex"
        for i, (f, t) in enumerate(zip(o.frames, times, strict=True)):
            fdata = f.data
            if strip_ansi:
                fdata, n = ansi.strip_ansi(fdata)
                stripped += n
            ftext, fenc = encode_output(fdata, frame_encoding)
            frames.append(
                models.Frame(
                    index=i,
                    data="" if view == "parsed" and f.parsed else ftext,
                    encoding=fenc,
                    offset=f.start,
                    t=t if verbose else None,  # per-frame arrival time only on request
                    parsed=None if view == "raw" else f.parsed,
                    checksum_valid=f.checksum_valid,
                    bad=bad_reason(f) if f.checksum_valid is False else None,
                )
            )
    matched = o.match is not None or o.match_frame is not None
    result = models.ReadResult(
        data=text,
        encoding=used,
        stop_reason=o.stop_reason,
        from_offset=o.from_offset,
        next_offset=o.next_offset,
        bytes_lost=o.bytes_lost,
        buffered_remaining=o.buffered_remaining,
        matched=matched,
        match_index=o.match_frame
        if o.match_frame is not None
        else (None if o.match is None else o.match.start),
        match_offset=None if o.match is None else o.from_offset + o.match.start,
        cursor=o.cursor,
        state=conn.state,
        frames=frames,
        frames_dropped=o.frames_dropped or 0,
        frames_skipped=o.frames_skipped,
        frames_filtered=o.frames_filtered or None,
        bytes_skipped=o.bytes_skipped or 0,
        error=o.error,
        responded=None if responder is None else responder.sent,
        ansi_stripped=stripped if strip_ansi else None,
        frames_view=view if frames is not None and view not in (None, "both") else None,
        counts=o.summary,
        bad_frames=_named_bad(o) if o.rejected else None,
        answered=_standing_answers(conn, o.from_offset - (o.bytes_skipped or 0), o.next_offset),
    )
    result.set_verbose(verbose)
    return result


def silence_hint(conn: Connection, o: reader.ReadOutcome, sent: bytes | None) -> str | None:
    """A wait that ended with nothing received since the port opened says so, and what may be wrong:
    a command without a line end is often not taken yet (issue 37.8)."""
    if o.stop_reason != "timeout" or conn.rx_end() > 0:
        return None
    if sent is None:
        why = messages.S_NOTHING_READ
    else:
        why = messages.S_NOTHING_CHECK if sent[-1:] in (b"\r", b"\n") else messages.S_NOTHING_NEWLINE
    return messages.S_NOTHING_SINCE_OPEN + why


def _is_text(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


MAX_ANSWERS_SHOWN = 8


def _standing_answers(conn: Connection, start: int, end: int) -> list[dict[str, Any]] | None:
    """The standing rules' answers to a match inside ``[start, end)`` (issue 26: made visible)."""
    found = [
        {"on": r.on, "offset": e["match_offset"]}
        for r in list(conn.responders)
        if r.standing
        for e in list(r.events)
        if start <= e.get("match_offset", -1) < end
    ]
    return found[:MAX_ANSWERS_SHOWN] or None


def _named_bad(o: reader.ReadOutcome) -> list[models.BadFrame]:
    """The bad frames a framed read dropped (the first few): where each would have been among the
    frames, its offset, why it is bad and how it starts."""
    starts = [f.start for f in o.frames or []]
    return [
        models.BadFrame(
            index=bisect.bisect_left(starts, f.start),
            offset=f.start,
            reason=bad_reason(f),
            excerpt=excerpt(f.data),
        )
        for f in o.rejected or []
    ]


def screen_for(conn: Connection, cursor: str, spec: dict[str, int]) -> TerminalScreen:
    """The terminal screen kept with ``cursor`` (a new size starts a new screen)."""
    unknown = sorted(set(spec) - {"cols", "rows"})
    if unknown:
        raise InvalidArgument(messages.SCREEN_SIZE.format(cols=MAX_COLS, rows=MAX_ROWS, min=MIN_SIZE))
    return conn.rx.cursor_screen(cursor, spec.get("cols", 80), spec.get("rows", 24))
