"""build_server: the MCP front door onto a ConnectionManager (tools stay thin: validate → call → shape)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer

from serial_mcp import __version__, messages
from serial_mcp.mcp import tools_core, tools_io, tools_line, tools_log, tools_util
from serial_mcp.mcp.schema import slim_tool_schemas
from serial_mcp.mcp.toolkit import ToolRegistry
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.ports import PortInfo, list_system_ports


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
    tools_core.register(reg, manager, port_lister)
    tools_io.register(reg, manager)
    tools_line.register(reg, manager)
    tools_log.register(reg, manager)
    tools_util.register(reg)
    server.middleware.append(reg.guard())
    slim_tool_schemas(server)
    return server
