"""Capture tools: export_log (snapshot to a file), record (continuous), list_captures."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Literal

from pydantic import Field

from serial_mcp import messages
from serial_mcp.core.capture import CaptureEvent, event_line, header_line
from serial_mcp.core.eventlog import LogEvent
from serial_mcp.errors import SerialMcpError
from serial_mcp.mcp import models, params
from serial_mcp.mcp.toolkit import ToolRegistry
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.recorder import Recorder, header_for, to_capture_event
from serial_mcp.store.captures import CaptureStore

CaptureName = Annotated[str, Field(description=messages.P_CAPTURE_NAME)]


def export_lines(conn: Connection, note: str | None) -> tuple[list[str], int]:
    """The connection's log as capture lines (rx bytes from the ring; dropped ones as ``lost``)."""
    with conn.lock:
        events = conn.log.since(0)
        start = conn.ring.start_offset
        items: list[tuple[LogEvent, bytes | None, int]] = []
        for e in events:
            payload = e.data
            if e.type == "rx" and e.offset is not None and e.length is not None:
                if e.offset + e.length <= start:
                    items.append((e, None, e.length))
                    continue
                begin = max(e.offset, start)
                payload = conn.ring.read(begin, e.offset + e.length - begin).data
                if begin > e.offset:  # partly dropped
                    items.append((e, None, begin - e.offset))
                    e = replace(e, offset=begin, length=len(payload))
            items.append((e, payload, 0))
        evicted = conn.log.evicted_events
    base = events[0].t if events else conn.opened_at
    lines = [header_line(header_for(conn, base, note))]
    if evicted:
        lines.append(
            event_line(CaptureEvent(0.0, "marker", None, None, {"label": f"{evicted} older events evicted"}))
        )
    for e, payload, lost in items:
        t = max(0.0, e.t - base)
        if lost:
            lines.append(event_line(CaptureEvent(t, "lost", None, None, {"bytes": lost})))
        else:
            lines.append(event_line(to_capture_event(e, payload, base)))
    return lines, len(items)


def register(reg: ToolRegistry, manager: ConnectionManager, store: CaptureStore) -> None:
    @reg.tool(title="Export the log to a capture file", description=messages.D_EXPORT_LOG)
    async def export_log(
        connection_id: params.ConnId,
        path: CaptureName,
        note: Annotated[str | None, Field(description=messages.P_NOTE)] = None,
    ) -> models.ExportResult:
        conn = manager.get(connection_id)
        if not store.enabled:
            raise SerialMcpError("capture_disabled", messages.CAPTURE_DISABLED)
        lines, n = export_lines(conn, note)
        written_path, size = store.export(path, lines)
        return models.ExportResult(path=written_path.name, events_written=n, bytes_written=size)

    @reg.tool(title="Record a connection to a capture file", description=messages.D_RECORD)
    async def record(
        connection_id: params.ConnId,
        action: Annotated[
            Literal["start", "stop", "status"], Field(description=messages.P_RECORD_ACTION)
        ] = "status",
        path: Annotated[str | None, Field(description=messages.P_CAPTURE_NAME)] = None,
        note: Annotated[str | None, Field(description=messages.P_NOTE)] = None,
    ) -> models.RecordResult:
        conn = manager.get(connection_id)
        if action == "start":
            if not path:
                raise SerialMcpError("invalid_argument", messages.RECORD_NEEDS_PATH)
            start_recording(conn, store, path, note)
        elif action == "stop":
            rec = await conn.stop_recording("stopped")
            if rec is None:
                raise SerialMcpError("not_recording", messages.NOT_RECORDING.format(id=conn.id))
            return _record_result(conn, rec, active=False)
        return _record_result(conn, conn.recorder, active=conn.recorder is not None)

    @reg.tool(
        title="List capture files", description=messages.D_LIST_CAPTURES, read_only=True, idempotent=True
    )
    async def list_captures() -> models.CapturesResult:
        if not store.enabled:
            raise SerialMcpError("capture_disabled", messages.CAPTURE_DISABLED)
        items = [
            models.CaptureItem(
                name=i.name,
                size=i.size,
                created=i.created,
                port=i.port,
                duration=i.duration,
                events=i.events,
                error=i.error,
            )
            for i in store.list()
        ]
        return models.CapturesResult(directory=str(store.directory), captures=items)


def start_recording(conn: Connection, store: CaptureStore, name: str, note: str | None = None) -> Recorder:
    if conn.recorder is not None:
        raise SerialMcpError(
            "already_recording", messages.ALREADY_RECORDING.format(id=conn.id, path=conn.recorder.path.name)
        )
    file, path, room = store.create_recording(name)
    rec = Recorder(conn, file, path, room, note)
    conn.start_recording(rec)
    return rec


def _record_result(conn: Connection, rec: Recorder | None, active: bool) -> models.RecordResult:
    if rec is None:
        return models.RecordResult(connection_id=conn.id, recording=False)
    return models.RecordResult(
        connection_id=conn.id,
        recording=active and rec.active,
        path=rec.path.name,
        events_written=rec.events_written,
        bytes_written=rec.bytes_written,
        stopped_reason=rec.stopped_reason,
    )
