"""I/O operations: read, write, transact, flush, capture_boot — all through the ring and its cursors.

Each takes the caller and plain typed arguments (as a tool or a script would give them), validates
everything before touching the port, and returns a typed result from ``engine/results.py``.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any, Literal

import anyio

from serial_mcp import messages
from serial_mcp.core.keys import encode_keys
from serial_mcp.core.pace import Pace
from serial_mcp.core.unknown_keys import reject_unknown_keys
from serial_mcp.engine import respond_ops, results, shaping
from serial_mcp.engine.access import Caller
from serial_mcp.engine.line_ops import pulse_lines
from serial_mcp.engine.services import Services
from serial_mcp.errors import InvalidArgument
from serial_mcp.serial import reader
from serial_mcp.serial.connection import Connection

MAX_HOLD_MS = 10_000
RESET_KEYS = ("dtr", "rts", "hold_ms")
FlushTarget = Literal["input", "output", "both"]


async def read(
    svc: Services,
    caller: Caller,
    connection_id: str,
    *,
    from_: Any = None,
    cursor: str | None = None,
    timeout_ms: int | None = None,
    idle_ms: int | None = None,
    max_bytes: int | None = None,
    match: Any = None,
    encoding: str | None = None,
    protocol: str | None = None,
    rx_framing: Any = None,
    rx_parser: Any = None,
    max_frames: int | None = None,
    respond: Any = None,
    strip_ansi: bool = False,
    screen: dict[str, int] | None = None,
    frames: str | None = None,
) -> results.ReadResult:
    """Read what arrived (from the caller's cursor unless ``from_`` says otherwise)."""
    respond_ops.check(svc, "read", respond)
    conn = svc.connection(caller, connection_id)
    resolved = shaping.codecs(conn, protocol, rx_framing, None, rx_parser)
    req = reader.build_read_request(
        from_=from_,
        cursor=caller.cursor(cursor),
        timeout_ms=timeout_ms,
        idle_ms=idle_ms,
        max_bytes=max_bytes,
        match=match,
        encoding=encoding,
        decode=shaping.decode_spec(resolved),
        max_frames=max_frames,
    )
    term = shaping.screen_for(conn, req.cursor, screen) if screen is not None else None
    start = reader.resolve_start(conn, req) if respond is not None else None  # a rule sees unread bytes
    async with respond_ops.armed(svc, "read", conn, respond, start) as responder:
        outcome = await reader.read(conn, req)
    result = shaping.read_result(conn, outcome, req.encoding, responder, strip_ansi=strip_ansi, view=frames)
    if outcome.cursor is not None:
        result.cursor = caller.shown_cursor(outcome.cursor)
    if term is not None:
        term.feed(outcome.data)
        result.screen = term.rows()
    return result


async def write(
    svc: Services,
    caller: Caller,
    connection_id: str,
    data: str = "",
    *,
    encoding: str | None = None,
    protocol: str | None = None,
    tx_framing: Any = None,
    pace: Any = None,
    keys: list[str] | None = None,
    timeout_ms: int | None = None,
) -> results.WriteResult:
    """Send ``data`` (decoded, then framed) and/or named ``keys``; FIFO with every other writer."""
    svc.policy.require_writable("write")
    conn = svc.connection(caller, connection_id, "write")
    resolved = shaping.codecs(conn, protocol, None, tx_framing, None)
    tail = encode_keys(keys) if keys else b""
    body = shaping.payload(data, encoding, resolved.tx_framing) if data or not tail else b""
    paced = shaping.pace_for(conn, pace)
    budget = shaping.write_budget(conn, body + tail, paced, timeout_ms)
    out = await shaping.write(conn, body + tail, paced, budget)
    return results.WriteResult(
        connection_id=conn.id,
        bytes_written=out.bytes_written,
        tx_bytes=conn.tx.tx_bytes,
        stop_reason="timeout" if out.timed_out else "complete",
    )


async def transact(
    svc: Services,
    caller: Caller,
    connection_id: str,
    data: str,
    *,
    encoding: str | None = None,
    cursor: str | None = None,
    timeout_ms: int | None = None,
    idle_ms: int | None = None,
    max_bytes: int | None = None,
    match: Any = None,
    read_encoding: str | None = None,
    protocol: str | None = None,
    rx_framing: Any = None,
    tx_framing: Any = None,
    rx_parser: Any = None,
    max_frames: int | None = None,
    pace: Any = None,
    respond: Any = None,
    read_echo: bool = False,
    write_timeout_ms: int | None = None,
    strip_ansi: bool = False,
    frames: str | None = None,
) -> results.TransactResult:
    """Write, then read the reply from an RX mark taken before the write (a fast reply is never
    missed); on RS-485 our own echo is skipped unless ``read_echo``."""
    svc.policy.require_writable("transact")
    conn = svc.connection(caller, connection_id, "write")
    respond_ops.check(svc, "transact", respond)
    # Everything is validated before a single byte is sent.
    resolved = shaping.codecs(conn, protocol, rx_framing, tx_framing, rx_parser)
    req = reader.build_read_request(
        cursor=caller.cursor(cursor),
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
    budget = shaping.write_budget(conn, body, paced, write_timeout_ms)
    shaping.require_open(conn)
    await shaping.take_tx_turn(conn, body, budget)
    try:
        mark = conn.rx_end()  # the RX live edge, taken BEFORE the write
        if respond is None:
            responder = None
            n, outcome = await _exchange(conn, body, paced, budget, mark, req, read_echo)
        else:
            async with respond_ops.armed(svc, "transact", conn, respond, mark) as responder:
                n, outcome = await _exchange(conn, body, paced, budget, mark, req, read_echo)
    finally:
        conn.tx.lock.release()
    read_part = shaping.read_result(
        conn, outcome, req.encoding, responder, strip_ansi=strip_ansi, view=frames
    )
    if read_part.cursor is not None:
        read_part.cursor = caller.shown_cursor(read_part.cursor)
    return results.TransactResult(
        write=results.WriteResult(connection_id=conn.id, bytes_written=n, tx_bytes=conn.tx.tx_bytes),
        read=read_part,
        mark_offset=mark,
    )


async def _exchange(
    conn: Connection,
    body: bytes,
    paced: Pace | None,
    budget: float,
    mark: int,
    req: reader.ReadRequest,
    read_echo: bool,
) -> tuple[int, reader.ReadOutcome]:
    """Write, then read the reply from ``mark`` (our own RS-485 echo skipped unless ``read_echo``)."""
    n = await shaping.write_all(conn, body, paced, budget)
    start = mark
    if conn.settings.rs485 is not None and not read_echo:
        start = await skip_echo(conn, mark, body, req.timeout_ms)
    return n, await reader.read(conn, req, start=start)


async def flush(
    svc: Services,
    caller: Caller,
    connection_id: str,
    target: FlushTarget = "input",
    cursor: str | None = None,
) -> results.FlushResult:
    """Discard unread input (moving the caller's cursor to the live edge) and/or unsent output."""
    svc.policy.require_writable("flush")
    conn = svc.connection(caller, connection_id, "write")
    name = caller.cursor(cursor)
    shaping.require_open(conn)
    discarded = 0
    if target in ("output", "both"):
        await anyio.to_thread.run_sync(conn.handle.reset_output)
    if target in ("input", "both"):
        end = await conn.purge_and_mark()
        with conn.lock:
            cur = conn.cursors.get(name, conn.ring.start_offset)
            discarded = max(0, end - cur.offset)
            cur.offset = end
            cur.drop_decoder()
    return results.FlushResult(connection_id=conn.id, target=target, bytes_discarded=discarded)


async def capture_boot(
    svc: Services,
    caller: Caller,
    connection_id: str,
    *,
    reset: Any = None,
    timeout_ms: int | None = None,
    idle_ms: int | None = None,
    max_bytes: int | None = None,
    match: Any = None,
    encoding: str | None = None,
    protocol: str | None = None,
    rx_framing: Any = None,
    rx_parser: Any = None,
    max_frames: int | None = None,
    respond: Any = None,
    send: str | None = None,
    send_encoding: str | None = None,
) -> results.CaptureBootResult:
    """Mark the RX edge exactly, then trigger the boot — pulse the reset lines and/or ``send``
    bytes (``reset\r`` for a board without a DTR/RTS reset) — and read the boot from the mark.
    Bytes that arrived before the mark and were not read are counted (``bytes_before_mark``)."""
    svc.policy.require_writable("capture_boot")
    conn = svc.connection(caller, connection_id, "control")
    pulse = parse_reset(reset)
    trigger = shaping.payload(send, send_encoding) if send else None
    respond_ops.check(svc, "capture_boot", respond)
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
    async with AsyncExitStack() as stack:
        async with conn.line_lock:
            mark = await conn.purge_and_mark()  # exact: no pre-reset byte lands after the mark
            responder = await stack.enter_async_context(
                respond_ops.armed(svc, "capture_boot", conn, respond, mark)
            )
            conn.record("marker", label="capture_boot", offset=mark)
            before = _unread_before(conn, caller, mark)
            if pulse is not None:
                await pulse_lines(conn, pulse)
            if trigger is not None:
                await shaping.write(conn, trigger, None)
        outcome = await reader.read(conn, req, start=mark)  # a private cursor: nothing shared moves
    return results.CaptureBootResult(
        mark_offset=mark,
        read=shaping.read_result(conn, outcome, req.encoding, responder),
        bytes_before_mark=before,
    )


def _unread_before(conn: Connection, caller: Caller, mark: int) -> int:
    """Retained bytes before ``mark`` that the caller's default cursor has not read."""
    with conn.lock:
        cur = conn.cursors.get(caller.cursor(None), conn.ring.start_offset)
        return max(0, mark - max(cur.offset, conn.ring.start_offset))


async def skip_echo(conn: Connection, mark: int, sent: bytes, timeout_ms: int) -> int:
    """On a half-duplex (RS-485) bus the transceiver hears our own bytes first: if exactly what we
    sent comes back, the reply starts after it; anything else is left in the reply."""
    req = reader.build_read_request(
        from_="now", timeout_ms=timeout_ms, max_bytes=len(sent), idle_ms=timeout_ms or 1, encoding="hex"
    )
    echo = await reader.read(conn, req, start=mark)
    return mark + len(sent) if echo.data == sent else mark


def parse_reset(reset: Any) -> dict[str, Any] | None:
    if reset is None:
        return None
    if not isinstance(reset, dict):
        raise InvalidArgument(messages.RESET_BAD)
    reject_unknown_keys(reset, RESET_KEYS, "reset")
    dtr, rts, hold = reset.get("dtr"), reset.get("rts"), reset.get("hold_ms", 100)
    if dtr is None and rts is None:
        raise InvalidArgument(messages.RESET_NO_LINE)
    if any(v is not None and not isinstance(v, bool) for v in (dtr, rts)):
        raise InvalidArgument(messages.RESET_BAD)
    if isinstance(hold, bool) or not isinstance(hold, int) or not 1 <= hold <= MAX_HOLD_MS:
        raise InvalidArgument(messages.RESET_HOLD.format(max=MAX_HOLD_MS))
    return {"dtr": dtr, "rts": rts, "hold_ms": hold}
