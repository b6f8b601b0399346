"""Line control and live settings: set_dtr_rts, set_flow_control, send_break, reconfigure."""

from __future__ import annotations

from typing import Annotated, Literal

import anyio
from mcp.server.mcpserver import Context
from pydantic import Field

from serial_mcp import messages
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import InvalidArgument, SerialMcpError
from serial_mcp.mcp import models, params, shaping
from serial_mcp.mcp.opening import Opener
from serial_mcp.mcp.toolkit import ToolRegistry
from serial_mcp.mcp.tools_io import set_lines
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.manager import ConnectionManager

MAX_BREAK_MS = 60_000


def register(reg: ToolRegistry, manager: ConnectionManager, opener: Opener) -> None:
    @reg.tool(
        title="Set DTR/RTS",
        description=messages.D_SET_DTR_RTS,
        destructive=True,
        idempotent=True,
        mutates=True,
    )
    async def set_dtr_rts(
        connection_id: params.ConnId,
        dtr: Annotated[bool | None, Field(description=messages.P_DTR)] = None,
        rts: Annotated[bool | None, Field(description=messages.P_RTS)] = None,
    ) -> models.LinesResult:
        conn = manager.get(connection_id)
        if dtr is None and rts is None:
            raise InvalidArgument(messages.LINES_NONE)
        shaping.require_open(conn)
        async with conn.line_lock:  # never interleaves with capture_boot's pulse
            await set_lines(conn, dtr, rts)
        return models.LinesResult(connection_id=conn.id, dtr=conn.dtr, rts=conn.rts)

    @reg.tool(title="Send BREAK", description=messages.D_SEND_BREAK, destructive=True, mutates=True)
    async def send_break(
        connection_id: params.ConnId,
        ctx: Context,
        duration_ms: Annotated[int, Field(description=messages.P_BREAK_MS)] = 250,
    ) -> models.BreakResult:
        conn = manager.get(connection_id)
        if isinstance(duration_ms, bool) or not 1 <= duration_ms <= MAX_BREAK_MS:
            raise InvalidArgument(messages.BREAK_RANGE.format(max=MAX_BREAK_MS))
        shaping.require_open(conn)
        async with conn.line_lock, conn.tx.lock:  # BREAK is on TX: no write may slip in
            await anyio.to_thread.run_sync(conn.handle.set_break, True)
            conn.record("break", duration_ms=duration_ms)
            try:
                steps = max(1, duration_ms // 100)
                for i in range(steps):
                    await anyio.sleep(duration_ms / 1000 / steps)
                    await ctx.report_progress(i + 1, steps, messages.BREAK_PROGRESS)
            finally:
                with anyio.CancelScope(shield=True):  # released on success, error and cancellation
                    await anyio.to_thread.run_sync(conn.handle.set_break, False)
        return models.BreakResult(connection_id=conn.id, duration_ms=duration_ms)

    @reg.tool(
        title="Set flow control",
        description=messages.D_SET_FLOW,
        destructive=True,
        idempotent=True,
        mutates=True,
    )
    async def set_flow_control(
        connection_id: params.ConnId,
        flow_control: Annotated[Literal["none", "software", "hardware"], Field(description=messages.P_FLOW)],
    ) -> models.ReconfigureResult:
        conn = manager.get(connection_id)
        result = await apply_settings(conn, conn.settings.updated(flow_control=flow_control))
        result.profile_persistence = await opener.persist(conn, {"flow_control": flow_control})
        return result

    @reg.tool(
        title="Change UART settings",
        description=messages.D_RECONFIGURE,
        destructive=True,
        idempotent=True,
        mutates=True,
    )
    async def reconfigure(
        connection_id: params.ConnId,
        baud_rate: params.BaudRate = None,
        data_bits: params.DataBits = None,
        parity: params.ParityArg = None,
        stop_bits: params.StopBits = None,
        flow_control: params.FlowControl = None,
    ) -> models.ReconfigureResult:
        conn = manager.get(connection_id)
        new = conn.settings.updated(  # validated before the port is touched
            baud_rate=baud_rate,
            data_bits=data_bits,
            parity=parity,
            stop_bits=stop_bits,
            flow_control=flow_control,
        )
        result = await apply_settings(conn, new)
        changed = {k: v for k, v in new.as_dict().items() if result.previous.get(k) != v}
        result.profile_persistence = await opener.persist(conn, changed) if changed else "not_needed"
        return result


async def apply_settings(conn: Connection, new: SerialSettings) -> models.ReconfigureResult:
    """Apply settings live; if the driver refuses, put the old ones back and say so."""
    shaping.require_open(conn)
    old = conn.settings
    async with conn.tx.lock:  # not in the middle of a write
        try:
            await anyio.to_thread.run_sync(conn.handle.apply_settings, new)
        except Exception as exc:  # drivers raise termios.error, SerialException, OSError, ValueError
            try:
                await anyio.to_thread.run_sync(conn.handle.apply_settings, old)
            except Exception:  # best effort; the error below says what happened
                pass
            raise SerialMcpError("settings_rejected", messages.SETTINGS_REJECTED.format(error=exc)) from exc
    conn.settings = new
    conn.record("config", settings=new.as_dict())
    return models.ReconfigureResult(connection_id=conn.id, settings=new.as_dict(), previous=old.as_dict())
