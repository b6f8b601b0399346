"""Line control and live settings: DTR/RTS, BREAK, flow control, reconfigure (with rollback).

The actions they share with other operations (``set_lines``, ``pulse_lines``, ``apply_settings``)
are in ``engine/line_actions.py``.
"""

from __future__ import annotations

import anyio

from serial_mcp import messages
from serial_mcp.engine import results, writing
from serial_mcp.engine.access import Caller
from serial_mcp.engine.line_actions import apply_settings, set_lines
from serial_mcp.engine.opening import Opener
from serial_mcp.engine.options import BreakOptions, FlowOptions, LinesOptions, ReconfigureOptions
from serial_mcp.engine.services import Services, report_progress
from serial_mcp.errors import InvalidArgument

MAX_BREAK_MS = 60_000


async def set_dtr_rts(
    svc: Services, caller: Caller, connection_id: str, opts: LinesOptions
) -> results.LinesResult:
    conn = svc.writing(caller, connection_id, "set_dtr_rts")
    dtr, rts = opts.dtr, opts.rts
    if dtr is None and rts is None:
        raise InvalidArgument(messages.LINES_NONE)
    writing.require_open(conn)
    async with conn.lines.turn():  # never interleaves with capture_boot's pulse
        await set_lines(conn, dtr, rts)
    return results.LinesResult(connection_id=conn.id, dtr=conn.lines.dtr, rts=conn.lines.rts)


async def send_break(
    svc: Services, caller: Caller, connection_id: str, opts: BreakOptions
) -> results.BreakResult:
    conn = svc.writing(caller, connection_id, "send_break")
    duration_ms = opts.duration_ms
    if isinstance(duration_ms, bool) or not 1 <= duration_ms <= MAX_BREAK_MS:
        raise InvalidArgument(messages.BREAK_RANGE.format(max=MAX_BREAK_MS))
    writing.require_open(conn)
    async with conn.lines.turn(), conn.tx.turn():  # BREAK is on TX: no write may slip in
        await anyio.to_thread.run_sync(conn.lines.set_break_blocking, True)
        conn.record("break", duration_ms=duration_ms)
        try:
            steps = max(1, duration_ms // 100)
            for i in range(steps):
                await anyio.sleep(duration_ms / 1000 / steps)
                await report_progress(i + 1, steps, messages.BREAK_PROGRESS)
        finally:
            with anyio.CancelScope(shield=True):  # released on success, error and cancellation
                await anyio.to_thread.run_sync(conn.lines.set_break_blocking, False)
    return results.BreakResult(connection_id=conn.id, duration_ms=duration_ms)


async def set_flow_control(
    svc: Services, caller: Caller, connection_id: str, opts: FlowOptions
) -> results.ReconfigureResult:
    conn = svc.writing(caller, connection_id, "set_flow_control")
    flow_control = opts.flow_control
    result = await apply_settings(conn, conn.settings.updated(flow_control=flow_control))
    result.profile_persistence = await Opener(svc).persist(conn, {"flow_control": flow_control})
    return result


async def reconfigure(
    svc: Services, caller: Caller, connection_id: str, opts: ReconfigureOptions
) -> results.ReconfigureResult:
    conn = svc.writing(caller, connection_id, "reconfigure")
    new = conn.settings.updated(**opts.settings())  # validated before the port is touched
    result = await apply_settings(conn, new)
    changed = {k: v for k, v in new.as_dict().items() if result.previous.get(k) != v}
    result.profile_persistence = await Opener(svc).persist(conn, changed) if changed else "not_needed"
    return result
