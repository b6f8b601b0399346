"""Line control and live settings tools: set_dtr_rts, set_flow_control, send_break, reconfigure."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from pydantic import Field

from serial_mcp import messages
from serial_mcp.engine import line_ops, results
from serial_mcp.engine.services import Services
from serial_mcp.mcp import params
from serial_mcp.mcp.callers import current
from serial_mcp.mcp.toolkit import ToolRegistry


def register(reg: ToolRegistry, svc: Services) -> None:
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
    ) -> results.LinesResult:
        return await line_ops.set_dtr_rts(svc, current(), connection_id, dtr, rts)

    @reg.tool(title="Send BREAK", description=messages.D_SEND_BREAK, destructive=True, mutates=True)
    async def send_break(
        connection_id: params.ConnId,
        ctx: Context,
        duration_ms: Annotated[params.Int, Field(description=messages.P_BREAK_MS)] = 250,
    ) -> results.BreakResult:
        async def progress(done: float, total: float | None, message: str) -> None:
            await ctx.report_progress(done, total, message)

        return await line_ops.send_break(svc, current(), connection_id, duration_ms, progress)

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
    ) -> results.ReconfigureResult:
        return await line_ops.set_flow_control(svc, current(), connection_id, flow_control)

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
    ) -> results.ReconfigureResult:
        return await line_ops.reconfigure(
            svc,
            current(),
            connection_id,
            baud_rate=baud_rate,
            data_bits=data_bits,
            parity=parity,
            stop_bits=stop_bits,
            flow_control=flow_control,
        )
