"""I/O operations: write, flush, capture_boot — all through the ring and its cursors (``read`` and
``transact`` are in ``engine/exchange.py`` with the dialog steps built on them).

Each takes the caller and plain typed arguments (as a tool or a script would give them), validates
everything before touching the port, and returns a typed result from ``engine/results.py``.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

import anyio

from serial_mcp import messages
from serial_mcp.core.keys import encode_keys
from serial_mcp.engine import lab_reset, read_plan, read_shape, responding, results, writing
from serial_mcp.engine.access import Caller
from serial_mcp.engine.line_actions import pulse_lines
from serial_mcp.engine.options import CaptureBootOptions, FlushOptions, WriteOptions
from serial_mcp.engine.services import Services
from serial_mcp.errors import InvalidArgument
from serial_mcp.serial import reader
from serial_mcp.serial.touch import touch_1200
from serial_mcp.serial.tx import MAX_WRITE_TIMEOUT_MS


async def write(svc: Services, caller: Caller, connection_id: str, opts: WriteOptions) -> results.WriteResult:
    """Send ``data`` (decoded, then framed) and/or named ``keys``; FIFO with every other writer."""
    svc.policy.require_writable("write")
    conn = svc.connection(caller, connection_id, "write")
    resolved = read_plan.codecs(conn, opts.protocol, None, opts.tx_framing, None)
    tail = encode_keys(opts.keys) if opts.keys else b""
    body = writing.payload(opts.data, opts.encoding, resolved.tx_framing) if opts.data or not tail else b""
    paced = writing.pace_for(conn, opts.pace)
    budget = writing.write_budget(conn, body + tail, paced, opts.timeout_ms)
    stall = _stall_s(opts.stall_ms)
    out = await writing.write(conn, body + tail, paced, budget, stall)
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


async def flush(svc: Services, caller: Caller, connection_id: str, opts: FlushOptions) -> results.FlushResult:
    """Discard unread input (moving the caller's cursor to the live edge) and/or unsent output."""
    svc.policy.require_writable("flush")
    conn = svc.connection(caller, connection_id, "write")
    name = caller.cursor(opts.cursor)
    writing.require_open(conn)
    discarded = 0
    if opts.target in ("output", "both"):
        await anyio.to_thread.run_sync(conn.lines.reset_output_blocking)
    if opts.target in ("input", "both"):
        discarded = conn.rx.flush_cursor(name, await conn.purge_and_mark())
    return results.FlushResult(connection_id=conn.id, target=opts.target, bytes_discarded=discarded)


async def capture_boot(
    svc: Services, caller: Caller, connection_id: str, opts: CaptureBootOptions
) -> results.CaptureBootResult:
    """Mark the RX edge exactly, then trigger the boot — pulse the reset lines and/or ``send``
    bytes (``reset\r`` for a board without a DTR/RTS reset) — and read the boot from the mark.
    Bytes that arrived before the mark and were not read are counted (``bytes_before_mark``)."""
    svc.policy.require_writable("capture_boot")
    conn = svc.connection(caller, connection_id, "control")
    pulse = lab_reset.filled(opts.reset) if opts.reset is not None else None  # checked: its type
    trigger = writing.payload(opts.send, None) if opts.send else None
    respond = opts.respond
    responding.check(svc, "capture_boot", respond)
    req = read_plan.read_request(conn, caller, opts, encoding=opts.encoding, default_timeout_ms=5000)
    writing.require_open(conn)
    lab = lab_reset.controls(conn) if lab_reset.is_lab(pulse) else None  # a labgrid place (issue 25)
    async with AsyncExitStack() as stack:
        async with conn.lines.turn():
            if lab is not None and pulse is not None:
                await lab_reset.before_mark(lab, pulse)  # power off, off_ms: the old board's last bytes
            mark = await conn.purge_and_mark()  # exact: no pre-reset byte lands after the mark
            responder = await stack.enter_async_context(
                responding.armed(svc, "capture_boot", conn, respond, mark)
            )
            conn.record("marker", label="capture_boot", offset=mark)
            conn.events.expect_reset(messages.EVENT_RESET_CAPTURE_BOOT, 15.0, mark)  # no boot-loop boot
            before = conn.rx.unread_before(caller.cursor(None), mark)
            if pulse is not None and pulse.get("kind") == "1200bps_touch":
                await touch_1200(conn)  # the board re-enumerates; the read waits for it to come back
            elif lab is not None and pulse is not None:
                await lab_reset.after_mark(lab, pulse)  # power on / reset line: the boot starts now
            elif pulse is not None:
                await pulse_lines(conn, pulse)
            if trigger is not None:
                await writing.write(conn, trigger, None)
        outcome = await reader.read(conn, req, start=mark)  # a private cursor: nothing shared moves
    return results.CaptureBootResult(
        mark_offset=mark,
        read=read_shape.read_result(conn, outcome, req.encoding, responder, cursor=outcome.cursor),
        bytes_before_mark=before,
        events=await read_shape.new_events(conn, req.cursor, outcome.next_offset),
    )
