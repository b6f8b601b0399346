"""Event-log tools: get_log and clear_log (export and recording live with the capture store)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from serial_mcp import messages
from serial_mcp.core.encoding import encode_output
from serial_mcp.core.eventlog import LogEvent
from serial_mcp.errors import InvalidArgument
from serial_mcp.mcp import models, params
from serial_mcp.mcp.toolkit import ToolRegistry
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.manager import ConnectionManager

MAX_LOG_LIMIT = 1000


def event_dict(conn: Connection, event: LogEvent, payloads: bool, encoding: str) -> dict[str, Any]:
    """One log event as JSON; rx bytes come from the ring (``lost: true`` once it dropped them).

    Call with ``conn.lock`` held so the ring cannot move underneath.
    """
    out: dict[str, Any] = {"seq": event.seq, "t": round(event.t, 6), "type": event.type, **event.fields}
    payload: bytes | None = event.data
    if event.type == "rx" and event.offset is not None and event.length is not None:
        out["offset"], out["length"] = event.offset, event.length
        if payloads:
            if event.offset < conn.ring.start_offset:
                out["lost"] = True
                payload = None
            else:
                payload = conn.ring.read(event.offset, event.length).data
    elif payload is not None:
        out["length"] = len(payload)
    if payloads and payload is not None:
        out["data"], out["encoding"] = encode_output(payload, encoding)
    return out


def register(reg: ToolRegistry, manager: ConnectionManager) -> None:
    @reg.tool(title="Connection event log", description=messages.D_GET_LOG, read_only=True, idempotent=True)
    async def get_log(
        connection_id: params.ConnId,
        limit: Annotated[int, Field(description=messages.P_LOG_LIMIT)] = 100,
        since: Annotated[int | None, Field(description=messages.P_LOG_SINCE)] = None,
        payloads: Annotated[bool, Field(description=messages.P_LOG_PAYLOADS)] = True,
        encoding: params.EncOut = None,
    ) -> models.LogResult:
        conn = manager.get(connection_id)
        if not 1 <= limit <= MAX_LOG_LIMIT:
            raise InvalidArgument(messages.LOG_BAD_LIMIT.format(max=MAX_LOG_LIMIT))
        if since is not None and since < 0:
            raise InvalidArgument(messages.LOG_BAD_SINCE)
        with conn.lock:
            events = conn.log.tail(limit) if since is None else conn.log.since(since, limit)
            items = [event_dict(conn, e, payloads, encoding or "utf8") for e in events]
            evicted = conn.log.evicted_events
            next_seq = events[-1].seq if events else (since or 0)
        return models.LogResult(
            connection_id=conn.id, events=items, last_seq=next_seq, evicted_events=evicted
        )

    @reg.tool(
        title="Clear the event log", description=messages.D_CLEAR_LOG, destructive=True, idempotent=True
    )
    async def clear_log(connection_id: params.ConnId) -> models.ClearLogResult:
        conn = manager.get(connection_id)
        with conn.lock:
            n = conn.log.clear()
        return models.ClearLogResult(connection_id=conn.id, events_cleared=n)
