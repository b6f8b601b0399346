"""Log and capture tools: get_log, clear_log, export_log, record, list_captures."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from serial_mcp import messages
from serial_mcp.engine import log_ops, results
from serial_mcp.engine.services import Services
from serial_mcp.mcp import params
from serial_mcp.mcp.callers import current
from serial_mcp.mcp.toolkit import ToolRegistry

CaptureName = Annotated[str, Field(description=messages.P_CAPTURE_NAME)]


def register(reg: ToolRegistry, svc: Services) -> None:
    @reg.tool(title="Connection event log", description=messages.D_GET_LOG, read_only=True, idempotent=True)
    async def get_log(
        connection_id: params.ConnId,
        limit: Annotated[params.Int, Field(description=messages.P_LOG_LIMIT)] = 100,
        since: Annotated[params.Int | None, Field(description=messages.P_LOG_SINCE)] = None,
        payloads: Annotated[bool, Field(description=messages.P_LOG_PAYLOADS)] = True,
        encoding: params.EncOut = None,
    ) -> results.LogResult:
        return log_ops.get_log(
            svc, current(), connection_id, limit=limit, since=since, payloads=payloads, encoding=encoding
        )

    @reg.tool(
        title="Clear the event log", description=messages.D_CLEAR_LOG, destructive=True, idempotent=True
    )
    async def clear_log(connection_id: params.ConnId) -> results.ClearLogResult:
        return log_ops.clear_log(svc, current(), connection_id)

    @reg.tool(title="Export the log to a capture file", description=messages.D_EXPORT_LOG)
    async def export_log(
        connection_id: params.ConnId,
        path: CaptureName,
        note: Annotated[str | None, Field(description=messages.P_NOTE)] = None,
    ) -> results.ExportResult:
        return log_ops.export_log(svc, current(), connection_id, path, note)

    @reg.tool(title="Record a connection to a capture file", description=messages.D_RECORD)
    async def record(
        connection_id: params.ConnId,
        action: Annotated[
            Literal["start", "stop", "status"], Field(description=messages.P_RECORD_ACTION)
        ] = "status",
        path: Annotated[str | None, Field(description=messages.P_CAPTURE_NAME)] = None,
        note: Annotated[str | None, Field(description=messages.P_NOTE)] = None,
        duration_ms: Annotated[params.Int | None, Field(description=messages.P_RECORD_DURATION)] = None,
    ) -> results.RecordResult:
        return await log_ops.record(svc, current(), connection_id, action, path, note, duration_ms)

    @reg.tool(
        title="List capture files", description=messages.D_LIST_CAPTURES, read_only=True, idempotent=True
    )
    async def list_captures() -> results.CapturesResult:
        return log_ops.list_captures(svc)
