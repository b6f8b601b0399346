"""I/O tools: read, write, transact, flush, capture_boot — all through the ring and its cursors."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import anyio
from pydantic import Field

from serial_mcp import messages
from serial_mcp.core.keys import encode_keys
from serial_mcp.errors import InvalidArgument
from serial_mcp.mcp import models, params, shaping
from serial_mcp.mcp.toolkit import ToolRegistry
from serial_mcp.serial import reader
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.manager import ConnectionManager

MAX_HOLD_MS = 10_000
RESET_KEYS = ("dtr", "rts", "hold_ms")


def register(reg: ToolRegistry, manager: ConnectionManager) -> None:
    @reg.tool(title="Read received data", description=messages.D_READ)
    async def read(
        connection_id: params.ConnId,
        from_: params.FromArg = None,
        cursor: params.CursorArg = None,
        timeout_ms: params.Timeout = None,
        idle_ms: params.IdleMs = None,
        max_bytes: params.MaxBytes = None,
        match: params.MatchArg = None,
        encoding: params.EncOut = None,
        protocol: params.Protocol = None,
        rx_framing: params.RxFraming = None,
        rx_parser: params.RxParser = None,
        max_frames: params.MaxFrames = None,
        respond: params.RespondArg = None,
        strip_ansi: Annotated[bool, Field(description=messages.P_STRIP_ANSI)] = False,
        screen: Annotated[dict[str, int] | None, Field(description=messages.P_SCREEN)] = None,
    ) -> models.ReadResult:
        conn = manager.get(connection_id)
        resolved = shaping.codecs(conn, protocol, rx_framing, None, rx_parser)
        req = reader.build_read_request(
            from_=from_,
            cursor=cursor,
            timeout_ms=timeout_ms,
            idle_ms=idle_ms,
            max_bytes=max_bytes,
            match=match,
            encoding=encoding,
            decode=shaping.decode_spec(resolved),
            max_frames=max_frames,
        )
        term = shaping.screen_for(conn, req.cursor, screen) if screen is not None else None
        with shaping.armed(conn, respond) as responder:
            outcome = await reader.read(conn, req)
        result = shaping.read_result(conn, outcome, req.encoding, responder, strip_ansi=strip_ansi)
        if term is not None:
            term.feed(outcome.data)
            result.screen = term.rows()
        return result

    @reg.tool(title="Write data", description=messages.D_WRITE, destructive=True, mutates=True)
    async def write(
        connection_id: params.ConnId,
        data: Annotated[str, Field(description=messages.P_DATA)] = "",
        encoding: params.EncIn = None,
        protocol: params.Protocol = None,
        tx_framing: params.TxFraming = None,
        pace: params.PaceArg = None,
        keys: Annotated[list[str] | None, Field(description=messages.P_KEYS)] = None,
    ) -> models.WriteResult:
        conn = manager.get(connection_id)
        resolved = shaping.codecs(conn, protocol, None, tx_framing, None)
        tail = encode_keys(keys) if keys else b""
        body = shaping.payload(data, encoding, resolved.tx_framing) if data or not tail else b""
        n = await shaping.write(conn, body + tail, shaping.pace_for(conn, pace))
        return models.WriteResult(connection_id=conn.id, bytes_written=n, tx_bytes=conn.tx.tx_bytes)

    @reg.tool(
        title="Write then read the reply", description=messages.D_TRANSACT, destructive=True, mutates=True
    )
    async def transact(
        connection_id: params.ConnId,
        data: params.Data,
        encoding: Annotated[params.Enc | None, Field(description=messages.P_ENCODING_BOTH)] = None,
        cursor: params.CursorR = None,
        timeout_ms: params.TimeoutR = None,
        idle_ms: params.IdleR = None,
        max_bytes: params.MaxBytesR = None,
        match: params.MatchR = None,
        read_encoding: Annotated[params.Enc | None, Field(description=messages.P_READ_ENCODING)] = None,
        protocol: params.ProtocolR = None,
        rx_framing: params.RxFramingR = None,
        tx_framing: params.TxFraming = None,
        rx_parser: params.RxParserR = None,
        max_frames: params.MaxFramesR = None,
        pace: params.PaceArg = None,
        respond: params.RespondArg = None,
        read_echo: Annotated[bool, Field(description=messages.P_READ_ECHO)] = False,
    ) -> models.TransactResult:
        conn = manager.get(connection_id)
        # Everything is validated before a single byte is sent.
        resolved = shaping.codecs(conn, protocol, rx_framing, tx_framing, rx_parser)
        req = reader.build_read_request(
            cursor=cursor,
            timeout_ms=timeout_ms,
            idle_ms=idle_ms,
            max_bytes=max_bytes,
            match=match,
            encoding=read_encoding or encoding,
            decode=shaping.decode_spec(resolved),
            max_frames=max_frames,
        )
        body = shaping.payload(data, encoding, resolved.tx_framing)
        paced = shaping.pace_for(conn, pace)
        shaping.require_open(conn)
        with shaping.armed(conn, respond) as responder:
            async with conn.tx.lock:
                mark = conn.snapshot().end_offset  # the RX live edge, taken BEFORE the write
                n = await shaping.write_locked(conn, body, paced)
                start = mark
                if conn.settings.rs485 is not None and not read_echo:
                    start = await skip_echo(conn, mark, body, req.timeout_ms)
                outcome = await reader.read(conn, req, start=start)
        return models.TransactResult(
            write=models.WriteResult(connection_id=conn.id, bytes_written=n, tx_bytes=conn.tx.tx_bytes),
            read=shaping.read_result(conn, outcome, req.encoding, responder),
            mark_offset=mark,
        )

    @reg.tool(
        title="Discard buffered data",
        description=messages.D_FLUSH,
        destructive=True,
        idempotent=True,
        mutates=True,
    )
    async def flush(
        connection_id: params.ConnId,
        target: Annotated[
            Literal["input", "output", "both"], Field(description=messages.P_FLUSH_TARGET)
        ] = "input",
        cursor: params.CursorArg = None,
    ) -> models.FlushResult:
        conn = manager.get(connection_id)
        shaping.require_open(conn)
        discarded = 0
        if target in ("output", "both"):
            await anyio.to_thread.run_sync(conn.handle.reset_output)
        if target in ("input", "both"):
            end = await conn.purge_and_mark()
            with conn.lock:
                cur = conn.cursors.get(cursor or "default", conn.ring.start_offset)
                discarded = max(0, end - cur.offset)
                cur.offset = end
                cur.drop_decoder()
        return models.FlushResult(connection_id=conn.id, target=target, bytes_discarded=discarded)

    @reg.tool(
        title="Reset the board and capture its boot output", description=messages.D_CAPTURE_BOOT, mutates=True
    )
    async def capture_boot(
        connection_id: params.ConnId,
        reset: Annotated[dict[str, Any] | None, Field(description=messages.P_RESET)] = None,
        timeout_ms: params.TimeoutR = None,
        idle_ms: params.IdleR = None,
        max_bytes: params.MaxBytesR = None,
        match: params.MatchR = None,
        encoding: params.EncOut = None,
        protocol: params.ProtocolR = None,
        rx_framing: params.RxFramingR = None,
        rx_parser: params.RxParserR = None,
        max_frames: params.MaxFramesR = None,
        respond: params.RespondArg = None,
    ) -> models.CaptureBootResult:
        conn = manager.get(connection_id)
        pulse = _parse_reset(reset)
        resolved = shaping.codecs(conn, protocol, rx_framing, None, rx_parser)
        req = reader.build_read_request(
            from_="now",
            timeout_ms=5000 if timeout_ms is None else timeout_ms,
            idle_ms=idle_ms,
            max_bytes=max_bytes,
            match=match,
            encoding=encoding,
            decode=shaping.decode_spec(resolved),
            max_frames=max_frames,
        )
        shaping.require_open(conn)
        with shaping.armed(conn, respond) as responder:
            async with conn.line_lock:
                mark = await conn.purge_and_mark()  # exact: no pre-reset byte lands after the mark
                conn.record("marker", label="capture_boot", offset=mark)
                if pulse is not None:
                    await _pulse(conn, pulse)
            outcome = await reader.read(conn, req, start=mark)  # a private cursor: nothing shared moves
        return models.CaptureBootResult(
            mark_offset=mark, read=shaping.read_result(conn, outcome, req.encoding, responder)
        )


async def skip_echo(conn: Connection, mark: int, sent: bytes, timeout_ms: int) -> int:
    """On a half-duplex (RS-485) bus the transceiver hears our own bytes first: if exactly what we
    sent comes back, the reply starts after it; anything else is left in the reply."""
    req = reader.build_read_request(
        timeout_ms=timeout_ms, max_bytes=len(sent), idle_ms=timeout_ms or 1, encoding="hex"
    )
    echo = await reader.read(conn, req, start=mark)
    return mark + len(sent) if echo.data == sent else mark


def _parse_reset(reset: Any) -> dict[str, Any] | None:
    if reset is None:
        return None
    if not isinstance(reset, dict):
        raise InvalidArgument(messages.RESET_BAD)
    unknown = sorted(set(reset) - set(RESET_KEYS))
    if unknown:
        raise InvalidArgument(
            messages.RESET_UNKNOWN_KEY.format(key=unknown[0], allowed=", ".join(RESET_KEYS))
        )
    dtr, rts, hold = reset.get("dtr"), reset.get("rts"), reset.get("hold_ms", 100)
    if dtr is None and rts is None:
        raise InvalidArgument(messages.RESET_NO_LINE)
    if any(v is not None and not isinstance(v, bool) for v in (dtr, rts)):
        raise InvalidArgument(messages.RESET_BAD)
    if isinstance(hold, bool) or not isinstance(hold, int) or not 1 <= hold <= MAX_HOLD_MS:
        raise InvalidArgument(messages.RESET_HOLD.format(max=MAX_HOLD_MS))
    return {"dtr": dtr, "rts": rts, "hold_ms": hold}


async def _pulse(conn: Connection, pulse: dict[str, Any]) -> None:
    """Drive the reset levels for ``hold_ms``, then restore the previous levels — always, even on
    error or cancellation (restoring is shielded)."""
    previous = {"dtr": conn.dtr, "rts": conn.rts}
    try:
        await set_lines(conn, pulse["dtr"], pulse["rts"])
        await anyio.sleep(pulse["hold_ms"] / 1000)
    finally:
        with anyio.CancelScope(shield=True):
            restore = {
                k: (True if previous[k] is None else previous[k]) for k in previous if pulse[k] is not None
            }
            await set_lines(conn, restore.get("dtr"), restore.get("rts"))


async def set_lines(conn: Connection, dtr: bool | None, rts: bool | None) -> None:
    """Set DTR and/or RTS (None = leave alone), record it, remember the levels."""

    def apply() -> None:
        if dtr is not None:
            conn.handle.set_dtr(dtr)
        if rts is not None:
            conn.handle.set_rts(rts)

    await anyio.to_thread.run_sync(apply)
    if dtr is not None:
        conn.dtr = dtr
    if rts is not None:
        conn.rts = rts
    conn.record("control", dtr=dtr, rts=rts)
