"""Discovery and lifecycle tools: list_ports, list_connections, open, close, get_status, reconnect."""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from pydantic import Field

from serial_mcp import messages
from serial_mcp.core.identity import plan_bare_open
from serial_mcp.mcp import models, params, shaping
from serial_mcp.mcp.opening import Opener
from serial_mcp.mcp.toolkit import ToolRegistry
from serial_mcp.serial.manager import ConnectionManager


def register(reg: ToolRegistry, manager: ConnectionManager, opener: Opener) -> None:
    port_lister = opener.port_lister

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
        matches: list[dict[str, Any]] = []
        if opener.profiles is not None:
            stored = await anyio.to_thread.run_sync(opener.profiles.list)
            infos = port_lister()
            matches = [plan_bare_open(p, infos, stored).as_dict() for p in infos]
        return models.ListPortsResult(ports=ports, profile_matches=matches)

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
        profile_mode: Annotated[str, Field(description=messages.P_PROFILE_MODE)] = "auto",
        mirror: Annotated[str | None, Field(description=messages.P_MIRROR)] = None,
        rs485: Annotated[dict[str, Any] | None, Field(description=messages.P_RS485)] = None,
        low_latency: Annotated[bool | None, Field(description=messages.P_LOW_LATENCY)] = None,
    ) -> models.OpenResult:
        fields = {
            "baud_rate": baud_rate,
            "data_bits": data_bits,
            "parity": parity,
            "stop_bits": stop_bits,
            "flow_control": flow_control,
            "rx_buffer_size": rx_buffer_size,
            "protocol": protocol,
            "rx_framing": rx_framing,
            "tx_framing": tx_framing,
            "rx_parser": rx_parser,
            "reconnect": reconnect,
            "pace": pace,
            "rs485": rs485,
            "low_latency": low_latency,
        }
        opened = await opener.open(port, fields, profile_mode=profile_mode, record=record, mirror=mirror)
        return models.open_result(opened.conn, opened.profile, opened.action)

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
