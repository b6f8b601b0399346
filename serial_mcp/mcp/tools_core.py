"""Discovery and lifecycle tools: list_ports, list_connections, open, close, get_status, reconnect."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from serial_mcp import messages
from serial_mcp.engine import port_ops, results
from serial_mcp.engine.services import Services
from serial_mcp.mcp import params
from serial_mcp.mcp.callers import current
from serial_mcp.mcp.toolkit import ToolRegistry

Rule = dict[str, Any] | str  # a respond rule, or "terminal"


def register(reg: ToolRegistry, svc: Services) -> None:
    @reg.tool(title="List serial ports", description=messages.D_LIST_PORTS, read_only=True, idempotent=True)
    async def list_ports() -> results.ListPortsResult:
        return await port_ops.list_ports(svc)

    @reg.tool(
        title="List open connections",
        description=messages.D_LIST_CONNECTIONS,
        read_only=True,
        idempotent=True,
    )
    async def list_connections() -> results.ListConnectionsResult:
        return port_ops.list_connections(svc)

    @reg.tool(title="Open a port", description=messages.D_OPEN)
    async def open(
        port: Annotated[str, Field(description=messages.P_PORT)],
        baud_rate: params.BaudRate = None,
        data_bits: params.DataBits = None,
        parity: params.ParityArg = None,
        stop_bits: params.StopBits = None,
        flow_control: params.FlowControl = None,
        rx_buffer_size: Annotated[params.Int | None, Field(description=messages.P_RX_BUFFER)] = None,
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
        share: Annotated[Literal["read", "write"] | None, Field(description=messages.P_SHARE)] = None,
        respond: Annotated[list[Rule] | None, Field(description=messages.P_RESPOND_OPEN)] = None,
    ) -> results.OpenResult:
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
        return await port_ops.open_port(
            svc,
            current(),
            port,
            fields,
            profile_mode=profile_mode,
            record=record,
            mirror=mirror,
            share=share,
            respond=respond,
        )

    @reg.tool(title="Close a connection", description=messages.D_CLOSE, destructive=True)
    async def close(connection_id: params.ConnId) -> results.CloseResult:
        return await port_ops.close(svc, current(), connection_id)

    @reg.tool(title="Connection status", description=messages.D_GET_STATUS, read_only=True, idempotent=True)
    async def get_status(connection_id: params.ConnId) -> results.StatusResult:
        return port_ops.get_status(svc, current(), connection_id)

    @reg.tool(title="Reopen a connection's port", description=messages.D_RECONNECT, mutates=True)
    async def reconnect(connection_id: params.ConnId) -> results.ReconnectResult:
        return await port_ops.reconnect(svc, current(), connection_id)
