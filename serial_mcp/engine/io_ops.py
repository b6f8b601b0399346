"""I/O operations: read, write, transact, flush, capture_boot — all through the ring and its cursors.

Each takes the caller and plain typed arguments (as a tool or a script would give them), validates
everything before touching the port, and returns a typed result from ``engine/results.py``.
"""

from __future__ import annotations

import functools
from contextlib import AsyncExitStack
from typing import Any

import anyio

from serial_mcp import messages
from serial_mcp.core.keys import encode_keys
from serial_mcp.core.pace import Pace
from serial_mcp.core.unknown_keys import reject_unknown_keys
from serial_mcp.engine import event_ops, lab_reset, respond_ops, results, shaping
from serial_mcp.engine.access import Caller
from serial_mcp.engine.line_ops import pulse_lines
from serial_mcp.engine.options import (
    CaptureBootOptions,
    FlushOptions,
    ReadOptions,
    TransactOptions,
    WriteOptions,
)
from serial_mcp.engine.services import Services
from serial_mcp.errors import InvalidArgument, Short
from serial_mcp.serial import reader
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.touch import touch_1200
from serial_mcp.serial.tx import MAX_WRITE_TIMEOUT_MS

MAX_HOLD_MS = 10_000
SHAPE_ASIDE_FRAMES = 1000  # a read with more frames is shaped on a worker thread
BOOT_TIMEOUT_MS = 5000  # capture_boot's default wait: a boot takes longer than a reply
RESET_KEYS = ("dtr", "rts", "hold_ms", "kind")
RESET_KINDS = ("lines", "1200bps_touch")


async def read(svc: Services, caller: Caller, connection_id: str, opts: ReadOptions) -> results.ReadResult:
    """Read what arrived (from the caller's cursor unless ``opts.from_`` says otherwise)."""
    respond_ops.check(svc, "read", opts.respond)
    conn = svc.connection(caller, connection_id, "write" if opts.respond is not None else "read")
    req = shaping.read_request(
        conn, caller, opts, from_=opts.from_, encoding=opts.encoding, **_summary_of(opts)
    )
    term = shaping.screen_for(conn, req.cursor, opts.screen) if opts.screen is not None else None
    start = reader.resolve_start(conn, req) if opts.respond is not None else None  # a rule sees unread bytes
    async with respond_ops.armed(svc, "read", conn, opts.respond, start) as responder:
        outcome = await reader.read(conn, req)
    shape = functools.partial(
        shaping.read_result, conn, outcome, req.encoding, responder, strip_ansi=opts.strip_ansi,
        view=opts.frames, verbose=opts.verbose,
    )  # fmt: skip
    # Thousands of frames take a tenth of a second and more to shape: beside the loop, not on it.
    many = outcome.frames is not None and len(outcome.frames) > SHAPE_ASIDE_FRAMES
    result = await anyio.to_thread.run_sync(shape) if many else shape()
    if outcome.cursor is not None:
        result.cursor = caller.shown_cursor(outcome.cursor)
    if term is not None:
        term.feed(outcome.data)
        result.screen = term.rows()
    result.events = await event_ops.new_events(conn, req.cursor, outcome.next_offset)
    return result


MAX_SUMMARY_FIELDS = 8


def _summary_of(opts: ReadOptions) -> dict[str, Any]:
    """``summary``/``to``/``fields`` as the read request takes them, checked: ``to`` and
    ``fields`` only with ``summary``, and a summary neither matches nor returns a screen."""
    if not opts.summary:
        for name in ("to", "fields"):
            if getattr(opts, name) is not None:
                raise InvalidArgument(messages.READ_SUMMARY_ONLY.format(name=name))
        return {}
    for name in ("match", "screen", "reply", "respond"):
        if getattr(opts, name) is not None:
            raise InvalidArgument(messages.READ_SUMMARY_WITH.format(name=name))
    fields = opts.fields or []
    if len(fields) > MAX_SUMMARY_FIELDS or not all(isinstance(f, str) and 0 < len(f) <= 64 for f in fields):
        raise InvalidArgument(messages.READ_SUMMARY_FIELDS.format(max=MAX_SUMMARY_FIELDS))
    return {"summary": tuple(fields), "to": opts.to}


async def write(svc: Services, caller: Caller, connection_id: str, opts: WriteOptions) -> results.WriteResult:
    """Send ``data`` (decoded, then framed) and/or named ``keys``; FIFO with every other writer."""
    svc.policy.require_writable("write")
    conn = svc.connection(caller, connection_id, "write")
    resolved = shaping.codecs(conn, opts.protocol, None, opts.tx_framing, None)
    tail = encode_keys(opts.keys) if opts.keys else b""
    body = shaping.payload(opts.data, opts.encoding, resolved.tx_framing) if opts.data or not tail else b""
    paced = shaping.pace_for(conn, opts.pace)
    budget = shaping.write_budget(conn, body + tail, paced, opts.timeout_ms)
    stall = _stall_s(opts.stall_ms)
    out = await shaping.write(conn, body + tail, paced, budget, stall)
    return results.WriteResult(
        connection_id=conn.id,
        bytes_written=out.bytes_written,
        tx_bytes=conn.tx.tx_bytes,
        stop_reason="stalled" if out.stalled else "timeout" if out.timed_out else "complete",
    )


def _stall_s(stall_ms: int | None) -> float | None:
    """``stall_ms`` in seconds, validated (None: the default stall time)."""
    if stall_ms is None:
        return None
    if not 1 <= stall_ms <= MAX_WRITE_TIMEOUT_MS:
        raise InvalidArgument(messages.WRITE_BAD_STALL.format(value=stall_ms, max=MAX_WRITE_TIMEOUT_MS))
    return stall_ms / 1000


async def transact(
    svc: Services, caller: Caller, connection_id: str, opts: TransactOptions
) -> results.TransactResult:
    """Write ``opts.data``, then read the reply from an RX mark taken before the write (a fast reply
    is never missed); on RS-485 our own echo is skipped unless ``read_echo``. (``dialog_ops`` runs
    ``steps`` and ``keys`` on top of this.)"""
    svc.policy.require_writable("transact")
    conn = svc.connection(caller, connection_id, "write")
    respond_ops.check(svc, "transact", opts.respond)
    # Everything is validated before a single byte is sent.
    resolved = shaping.codecs(conn, opts.protocol, opts.rx_framing, opts.tx_framing, opts.rx_parser)
    encoding = opts.read_encoding or opts.encoding
    req = shaping.read_request(conn, caller, opts, encoding=encoding, resolved=resolved)
    body = shaping.payload(opts.data, opts.encoding, resolved.tx_framing)
    paced = shaping.pace_for(conn, opts.pace)
    budget = shaping.write_budget(conn, body, paced, opts.write_timeout_ms)
    shaping.require_open(conn)
    async with shaping.tx_turn(conn, body, budget):
        mark = conn.rx_end()  # the RX live edge, taken BEFORE the write
        if opts.respond is None:
            responder = None
            n, outcome = await _exchange(conn, body, paced, budget, mark, req, opts.read_echo)
        else:
            async with respond_ops.armed(svc, "transact", conn, opts.respond, mark) as responder:
                n, outcome = await _exchange(conn, body, paced, budget, mark, req, opts.read_echo)
    read_part = shaping.read_result(
        conn,
        outcome,
        req.encoding,
        responder,
        strip_ansi=opts.strip_ansi,
        view=opts.frames,
        verbose=opts.verbose,
    )
    if read_part.cursor is not None:
        read_part.cursor = caller.shown_cursor(read_part.cursor)
    result = results.TransactResult(
        write=results.WriteResult(connection_id=conn.id, bytes_written=n, tx_bytes=conn.tx.tx_bytes),
        read=read_part,
        mark_offset=mark,
        events=await event_ops.new_events(conn, req.cursor, outcome.next_offset),
    )
    result.set_verbose(opts.verbose)
    return result


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


async def flush(svc: Services, caller: Caller, connection_id: str, opts: FlushOptions) -> results.FlushResult:
    """Discard unread input (moving the caller's cursor to the live edge) and/or unsent output."""
    svc.policy.require_writable("flush")
    conn = svc.connection(caller, connection_id, "write")
    name = caller.cursor(opts.cursor)
    shaping.require_open(conn)
    discarded = 0
    if opts.target in ("output", "both"):
        await anyio.to_thread.run_sync(conn.handle.reset_output)
    if opts.target in ("input", "both"):
        discarded = conn.flush_cursor(name, await conn.purge_and_mark())
    return results.FlushResult(connection_id=conn.id, target=opts.target, bytes_discarded=discarded)


async def capture_boot(
    svc: Services, caller: Caller, connection_id: str, opts: CaptureBootOptions
) -> results.CaptureBootResult:
    """Mark the RX edge exactly, then trigger the boot — pulse the reset lines and/or ``send``
    bytes (``reset\r`` for a board without a DTR/RTS reset) — and read the boot from the mark.
    Bytes that arrived before the mark and were not read are counted (``bytes_before_mark``)."""
    svc.policy.require_writable("capture_boot")
    conn = svc.connection(caller, connection_id, "control")
    pulse = parse_reset(opts.reset)
    trigger = shaping.payload(opts.send, None) if opts.send else None
    respond = opts.respond
    respond_ops.check(svc, "capture_boot", respond)
    req = shaping.read_request(
        conn, caller, opts, from_="now", encoding=opts.encoding, default_timeout_ms=5000
    )
    shaping.require_open(conn)
    lab = lab_reset.controls(conn) if lab_reset.is_lab(pulse) else None  # a labgrid place (issue 25)
    async with AsyncExitStack() as stack:
        async with conn.line_lock:
            if lab is not None and pulse is not None:
                await lab_reset.before_mark(lab, pulse)  # power off, off_ms: the old board's last bytes
            mark = await conn.purge_and_mark()  # exact: no pre-reset byte lands after the mark
            responder = await stack.enter_async_context(
                respond_ops.armed(svc, "capture_boot", conn, respond, mark)
            )
            conn.record("marker", label="capture_boot", offset=mark)
            before = conn.unread_before(caller.cursor(None), mark)
            if pulse is not None and pulse.get("kind") == "1200bps_touch":
                await touch_1200(conn)  # the board re-enumerates; the read waits for it to come back
            elif lab is not None and pulse is not None:
                await lab_reset.after_mark(lab, pulse)  # power on / reset line: the boot starts now
            elif pulse is not None:
                await pulse_lines(conn, pulse)
            if trigger is not None:
                await shaping.write(conn, trigger, None)
        outcome = await reader.read(conn, req, start=mark)  # a private cursor: nothing shared moves
    result = results.CaptureBootResult(
        mark_offset=mark,
        read=shaping.read_result(conn, outcome, req.encoding, responder, verbose=opts.verbose),
        bytes_before_mark=before,
        events=await event_ops.new_events(conn, req.cursor, outcome.next_offset),
    )
    result.set_verbose(opts.verbose)
    return result


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
    if lab_reset.is_lab(reset):
        return lab_reset.parse(reset)
    reject_unknown_keys(reset, RESET_KEYS, "reset")
    kind = reset.get("kind", "lines")
    if kind not in RESET_KINDS:
        raise InvalidArgument(messages.RESET_KIND_BAD.format(value=Short(kind)))
    if kind == "1200bps_touch":
        others = sorted(k for k in reset if k != "kind")
        if others:
            raise InvalidArgument(messages.RESET_TOUCH_ALONE.format(keys=", ".join(others)))
        return {"kind": kind}
    dtr, rts, hold = reset.get("dtr"), reset.get("rts"), reset.get("hold_ms", 100)
    if dtr is None and rts is None:
        raise InvalidArgument(messages.RESET_NO_LINE)
    if any(v is not None and not isinstance(v, bool) for v in (dtr, rts)):
        raise InvalidArgument(messages.RESET_BAD)
    if isinstance(hold, bool) or not isinstance(hold, int) or not 1 <= hold <= MAX_HOLD_MS:
        raise InvalidArgument(messages.RESET_HOLD.format(max=MAX_HOLD_MS))
    return {"dtr": dtr, "rts": rts, "hold_ms": hold}
