"""Console and bench tools: detect_baud and file_transfer (XMODEM/YMODEM)."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from pydantic import Field

from serial_mcp import messages
from serial_mcp.engine import console_ops, results
from serial_mcp.engine.services import Services
from serial_mcp.mcp import params
from serial_mcp.mcp.callers import current
from serial_mcp.mcp.toolkit import ToolRegistry


def register(reg: ToolRegistry, svc: Services) -> None:
    @reg.tool(title="Detect the baud rate", description=messages.D_DETECT_BAUD, mutates=True)
    async def detect_baud(
        connection_id: params.ConnId,
        candidates: Annotated[list[params.Int] | None, Field(description=messages.P_CANDIDATES)] = None,
        window_ms: Annotated[params.Int, Field(description=messages.P_WINDOW_MS)] = 600,
        probe: Annotated[str | None, Field(description=messages.P_PROBE)] = None,
    ) -> results.BaudResult:
        return await console_ops.detect_baud(svc, current(), connection_id, candidates, window_ms, probe)

    @reg.tool(title="XMODEM/YMODEM file transfer", description=messages.D_FILE_TRANSFER, mutates=True)
    async def file_transfer(
        connection_id: params.ConnId,
        ctx: Context,
        direction: Annotated[Literal["send", "receive"], Field(description=messages.P_DIRECTION)],
        protocol: Annotated[
            Literal["xmodem", "xmodem_crc", "xmodem_1k", "ymodem"], Field(description=messages.P_XPROTOCOL)
        ] = "xmodem_crc",
        data: Annotated[str | None, Field(description=messages.P_XDATA)] = None,
        encoding: params.EncIn = None,
        filename: Annotated[str | None, Field(description=messages.P_XFILENAME)] = None,
    ) -> results.TransferResultModel:
        async def progress(done: float, total: float | None, message: str) -> None:
            await ctx.report_progress(done, total, message)

        return await console_ops.file_transfer(
            svc, current(), connection_id, direction, protocol, data, encoding, filename, progress
        )
