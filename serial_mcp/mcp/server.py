"""build_server: the MCP front door onto a ConnectionManager (tools stay thin: validate → call → shape)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from serial_mcp import __version__, messages
from serial_mcp.core.encoding import decode_input, encode_output
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import InvalidArgument, SerialMcpError
from serial_mcp.mcp import models
from serial_mcp.mcp.schema import slim_tool_schemas
from serial_mcp.mcp.toolkit import ToolRegistry
from serial_mcp.serial import reader
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.ports import PortInfo, list_system_ports

log = logging.getLogger(__name__)

Enc = Literal["utf8", "hex", "base64"]
ConnId = Annotated[str, Field(description=messages.P_CONNECTION_ID)]
Timeout = Annotated[int | None, Field(description=messages.P_TIMEOUT_MS)]
IdleMs = Annotated[int | None, Field(description=messages.P_IDLE_MS)]
MaxBytes = Annotated[int | None, Field(description=messages.P_MAX_BYTES)]
MatchArg = Annotated[dict[str, Any] | str | None, Field(description=messages.P_MATCH)]
CursorArg = Annotated[str | None, Field(description=messages.P_CURSOR)]
FromArg = Annotated[int | str | None, Field(alias="from", description=messages.P_FROM)]


def build_server(
    manager: ConnectionManager,
    *,
    port_lister: Callable[[], list[PortInfo]] = list_system_ports,
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING",
) -> MCPServer:
    """An MCPServer whose tools drive ``manager``; tests pass a manager over a fake or PTY opener."""

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {"manager": manager}
        finally:
            await manager.close_all()

    server: MCPServer = MCPServer(
        "serial-mcp",
        version=__version__,
        instructions=messages.SERVER_INSTRUCTIONS,
        lifespan=lifespan,
        log_level=log_level,
    )
    reg = ToolRegistry(server)

    # --- discovery -------------------------------------------------------------------------------

    @reg.tool(title="List serial ports", description=messages.D_LIST_PORTS, read_only=True, idempotent=True)
    async def list_ports() -> models.ListPortsResult:
        open_by_port = {c.port: c.id for c in manager.list()}
        ports = [
            models.Port(
                name=p.name,
                description=p.description,
                vid=p.vid,
                pid=p.pid,
                serial_number=p.serial_number,
                manufacturer=p.manufacturer,
                product=p.product,
                interface=p.interface,
                location=p.location,
                transport=p.transport,
                open_as=open_by_port.get(p.name),
            )
            for p in port_lister()
        ]
        return models.ListPortsResult(ports=ports, profile_matches=[])

    @reg.tool(
        title="List open connections",
        description=messages.D_LIST_CONNECTIONS,
        read_only=True,
        idempotent=True,
    )
    async def list_connections() -> models.ListConnectionsResult:
        return models.ListConnectionsResult(connections=[_summary(c) for c in manager.list()])

    # --- lifecycle -------------------------------------------------------------------------------

    @reg.tool(title="Open a port", description=messages.D_OPEN, open_world=True)
    async def open(
        port: Annotated[str, Field(description=messages.P_PORT)],
        baud_rate: Annotated[int | None, Field(description=messages.P_BAUD)] = None,
        data_bits: Annotated[Literal[5, 6, 7, 8] | None, Field(description=messages.P_DATA_BITS)] = None,
        parity: Annotated[Literal["none", "even", "odd", "mark", "space"] | None, Field()] = None,
        stop_bits: Annotated[float | None, Field(description=messages.P_STOP_BITS)] = None,
        flow_control: Annotated[Literal["none", "software", "hardware"] | None, Field()] = None,
        rx_buffer_size: Annotated[int | None, Field(description=messages.P_RX_BUFFER)] = None,
    ) -> models.OpenResult:
        settings = SerialSettings().updated(
            baud_rate=baud_rate,
            data_bits=data_bits,
            parity=parity,
            stop_bits=stop_bits,
            flow_control=flow_control,
        )
        conn = await manager.open(port, settings, rx_buffer_size)
        return models.OpenResult(
            connection_id=conn.id,
            port=conn.port,
            state=conn.state,
            baud_rate=conn.settings.baud_rate,
            settings=conn.settings.as_dict(),
            rx_buffer_size=conn.ring.capacity,
            profile=None,
        )

    @reg.tool(title="Close a connection", description=messages.D_CLOSE, destructive=True, idempotent=False)
    async def close(connection_id: ConnId) -> models.CloseResult:
        conn = await manager.close(connection_id)
        return models.CloseResult(
            connection_id=conn.id, port=conn.port, rx_bytes=conn.ring.end_offset, tx_bytes=conn.tx.tx_bytes
        )

    @reg.tool(title="Connection status", description=messages.D_GET_STATUS, read_only=True, idempotent=True)
    async def get_status(connection_id: ConnId) -> models.StatusResult:
        conn = manager.get(connection_id)
        return _status(conn)

    # --- I/O -------------------------------------------------------------------------------------

    @reg.tool(title="Read received data", description=messages.D_READ, read_only=False, idempotent=False)
    async def read(
        connection_id: ConnId,
        from_: FromArg = None,
        cursor: CursorArg = None,
        timeout_ms: Timeout = None,
        idle_ms: IdleMs = None,
        max_bytes: MaxBytes = None,
        match: MatchArg = None,
        encoding: Annotated[Enc | None, Field(description=messages.P_ENCODING_OUT)] = None,
    ) -> models.ReadResult:
        conn = manager.get(connection_id)
        req = reader.build_read_request(
            from_=from_,
            cursor=cursor,
            timeout_ms=timeout_ms,
            idle_ms=idle_ms,
            max_bytes=max_bytes,
            match=match,
            encoding=encoding,
        )
        outcome = await reader.read(conn, req)
        return _read_result(conn, outcome, req.encoding)

    @reg.tool(title="Write data", description=messages.D_WRITE, destructive=True)
    async def write(
        connection_id: ConnId,
        data: Annotated[str, Field(description=messages.P_DATA)],
        encoding: Annotated[Enc | None, Field(description=messages.P_ENCODING_IN)] = None,
    ) -> models.WriteResult:
        conn = manager.get(connection_id)
        payload = _payload(data, encoding)
        n = await _write(conn, payload)
        return models.WriteResult(connection_id=conn.id, bytes_written=n, tx_bytes=conn.tx.tx_bytes)

    @reg.tool(title="Write then read the reply", description=messages.D_TRANSACT, destructive=True)
    async def transact(
        connection_id: ConnId,
        data: Annotated[str, Field(description=messages.P_DATA)],
        encoding: Annotated[Enc | None, Field(description=messages.P_ENCODING_BOTH)] = None,
        cursor: CursorArg = None,
        timeout_ms: Timeout = None,
        idle_ms: IdleMs = None,
        max_bytes: MaxBytes = None,
        match: MatchArg = None,
        read_encoding: Annotated[Enc | None, Field(description=messages.P_READ_ENCODING)] = None,
    ) -> models.TransactResult:
        conn = manager.get(connection_id)
        # Everything is validated before a single byte is sent.
        req = reader.build_read_request(
            cursor=cursor,
            timeout_ms=timeout_ms,
            idle_ms=idle_ms,
            max_bytes=max_bytes,
            match=match,
            encoding=read_encoding or encoding,
        )
        payload = _payload(data, encoding)
        _require_open(conn)
        async with conn.tx.lock:
            mark = conn.snapshot().end_offset  # the RX live edge, taken BEFORE the write
            n = await _write_locked(conn, payload)
            outcome = await reader.read(conn, req, start=mark)
        return models.TransactResult(
            write=models.WriteResult(connection_id=conn.id, bytes_written=n, tx_bytes=conn.tx.tx_bytes),
            read=_read_result(conn, outcome, req.encoding),
            mark_offset=mark,
        )

    @reg.tool(title="Discard buffered data", description=messages.D_FLUSH, destructive=True, idempotent=True)
    async def flush(
        connection_id: ConnId,
        target: Annotated[
            Literal["input", "output", "both"], Field(description=messages.P_FLUSH_TARGET)
        ] = "input",
        cursor: CursorArg = None,
    ) -> models.FlushResult:
        conn = manager.get(connection_id)
        _require_open(conn)
        discarded = 0
        if target in ("output", "both"):
            conn.handle.reset_output()
        if target in ("input", "both"):
            conn.handle.reset_input()
            snap = conn.snapshot()
            with conn.lock:
                cur = conn.cursors.get(cursor or "default", snap.start_offset)
                discarded = max(0, snap.end_offset - cur.offset)
                cur.offset = snap.end_offset
                cur.pending.clear()
                cur.decoder = None
        return models.FlushResult(connection_id=conn.id, target=target, bytes_discarded=discarded)

    server.middleware.append(reg.guard())
    slim_tool_schemas(server)
    server.tool_registry = reg  # type: ignore[attr-defined]
    return server


# --- shaping helpers (module level: no state) -----------------------------------------------------


def _payload(data: str, encoding: str | None) -> bytes:
    payload = decode_input(data, encoding or "utf8")
    if not payload:
        raise InvalidArgument(messages.WRITE_EMPTY)
    return payload


def _require_open(conn: Connection) -> None:
    if conn.state != "open":
        raise SerialMcpError(
            "not_connected",
            messages.NOT_CONNECTED.format(id=conn.id, state=conn.state, error=conn.last_error or "-"),
        )


async def _write(conn: Connection, payload: bytes) -> int:
    _require_open(conn)
    async with conn.tx.lock:
        return await _write_locked(conn, payload)


async def _write_locked(conn: Connection, payload: bytes) -> int:
    try:
        return await conn.tx.write_locked(payload)
    except TimeoutError as exc:
        raise SerialMcpError("write_timeout", messages.WRITE_TIMEOUT.format(id=conn.id)) from exc
    except OSError as exc:
        conn.note_write_error(exc)
        raise SerialMcpError("io_error", messages.WRITE_FAILED.format(id=conn.id, error=exc)) from exc


def _summary(c: Connection) -> models.ConnectionSummary:
    return models.ConnectionSummary(
        connection_id=c.id,
        port=c.port,
        state=c.state,
        baud_rate=c.settings.baud_rate,
        rx_bytes=c.ring.end_offset,
        tx_bytes=c.tx.tx_bytes,
    )


def _status(conn: Connection) -> models.StatusResult:
    with conn.lock:
        start, end = conn.ring.start_offset, conn.ring.end_offset
        cursors = {
            c.name: models.CursorStatus(
                offset=c.offset, unread=max(0, end - max(c.offset, start)), lost=max(0, start - c.offset)
            )
            for c in conn.cursors
        }
        evicted = conn.ring.dropped_total
    lines: dict[str, bool | None] = {"cts": None, "dsr": None, "ri": None, "cd": None}
    if conn.state == "open":
        try:
            lines = conn.handle.modem_lines()
        except OSError:
            pass
    return models.StatusResult(
        connection_id=conn.id,
        port=conn.port,
        state=conn.state,
        settings=conn.settings.as_dict(),
        rx_bytes=end,
        tx_bytes=conn.tx.tx_bytes,
        start_offset=start,
        end_offset=end,
        rx_buffer_size=conn.ring.capacity,
        cursors=cursors,
        bytes_lost_total=conn.bytes_lost_total,
        bytes_evicted=evicted,
        cts=lines.get("cts"),
        dsr=lines.get("dsr"),
        ri=lines.get("ri"),
        cd=lines.get("cd"),
        last_error=conn.last_error,
        opened_at=datetime.fromtimestamp(conn.opened_at, UTC).isoformat(),
    )


def _read_result(conn: Connection, o: reader.ReadOutcome, encoding: str) -> models.ReadResult:
    text, used = encode_output(o.data, encoding)
    return models.ReadResult(
        data=text,
        encoding=used,
        stop_reason=o.stop_reason,
        from_offset=o.from_offset,
        next_offset=o.next_offset,
        bytes_lost=o.bytes_lost,
        buffered_remaining=o.buffered_remaining,
        matched=o.match is not None,
        match_index=None if o.match is None else o.match.start,
        match_offset=None if o.match is None else o.from_offset + o.match.start,
        cursor=o.cursor,
    )
