"""Discovery and lifecycle tools: list_ports, list_connections, open, close, get_status, reconnect."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import anyio
from pydantic import Field

from serial_mcp import messages
from serial_mcp.core.pace import parse_pace
from serial_mcp.core.presets import effective
from serial_mcp.core.reconnect import parse_policy
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import SerialMcpError
from serial_mcp.mcp import models, params, shaping
from serial_mcp.mcp.toolkit import ToolRegistry
from serial_mcp.mcp.tools_capture import start_recording
from serial_mcp.serial import reader
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.policy import resolve_port
from serial_mcp.serial.ports import PortInfo
from serial_mcp.store.captures import CaptureStore, validate_name


def register(
    reg: ToolRegistry,
    manager: ConnectionManager,
    port_lister: Callable[[], list[PortInfo]],
    captures: CaptureStore,
) -> None:
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
        return models.ListConnectionsResult(connections=[shaping.summary(c) for c in manager.list()])

    @reg.tool(title="Open a port", description=messages.D_OPEN)
    async def open(
        port: Annotated[str, Field(description=messages.P_PORT)],
        baud_rate: params.BaudRate = None,
        data_bits: params.DataBits = None,
        parity: params.ParityArg = None,
        stop_bits: params.StopBits = None,
        flow_control: params.FlowControl = None,
        rx_buffer_size: Annotated[int | None, Field(description=messages.P_RX_BUFFER)] = None,
        protocol: params.Protocol = None,
        rx_framing: params.RxFraming = None,
        tx_framing: params.TxFraming = None,
        rx_parser: params.RxParser = None,
        reconnect: Annotated[bool | dict[str, Any] | None, Field(description=messages.P_RECONNECT)] = None,
        pace: params.PaceArg = None,
        record: Annotated[str | None, Field(description=messages.P_RECORD_OPEN)] = None,
    ) -> models.OpenResult:
        settings = SerialSettings().updated(
            baud_rate=baud_rate,
            data_bits=data_bits,
            parity=parity,
            stop_bits=stop_bits,
            flow_control=flow_control,
        )
        defaults: dict[str, Any] = {
            "protocol": protocol,
            "rx_framing": rx_framing,
            "tx_framing": tx_framing,
            "rx_parser": rx_parser,
        }
        # Validate the connection defaults now, so a bad framing fails the open, not the first read.
        resolved = effective({}, defaults)
        reader.build_decode_spec(resolved.rx_framing, resolved.rx_parser)
        shaping.payload("x", "utf8", resolved.tx_framing)
        defaults["pace"] = parse_pace(pace)
        policy = parse_policy(reconnect)
        if record is not None:  # checked before the port is touched
            validate_name(record)
            if not captures.enabled:
                raise SerialMcpError("capture_disabled", messages.CAPTURE_DISABLED)
        port = await anyio.to_thread.run_sync(resolve_port, port, port_lister)
        conn = await manager.open(port, settings, rx_buffer_size, defaults, reconnect=policy)
        if record is not None:
            try:
                start_recording(conn, captures, record)
            except BaseException:
                await manager.close(conn.id)
                raise
        return models.OpenResult(
            connection_id=conn.id,
            port=conn.port,
            state=conn.state,
            baud_rate=conn.settings.baud_rate,
            settings=conn.settings.as_dict(),
            rx_buffer_size=conn.ring.capacity,
            profile=None,
        )

    @reg.tool(title="Close a connection", description=messages.D_CLOSE, destructive=True)
    async def close(connection_id: params.ConnId) -> models.CloseResult:
        conn = await manager.close(connection_id)
        return models.CloseResult(
            connection_id=conn.id, port=conn.port, rx_bytes=conn.ring.end_offset, tx_bytes=conn.tx.tx_bytes
        )

    @reg.tool(title="Connection status", description=messages.D_GET_STATUS, read_only=True, idempotent=True)
    async def get_status(connection_id: params.ConnId) -> models.StatusResult:
        return shaping.status(manager.get(connection_id))

    @reg.tool(title="Reopen a connection's port", description=messages.D_RECONNECT, mutates=True)
    async def reconnect(connection_id: params.ConnId) -> models.ReconnectResult:
        conn = manager.get(connection_id)
        await conn.reconnect_now()
        return models.ReconnectResult(
            connection_id=conn.id,
            state=conn.state,
            reconnect_attempts=conn.reconnect_attempts,
            end_offset=conn.ring.end_offset,
        )
