"""serial-mcp: safe, lossless, fast serial ports for AI agents, bench engineers and CI.

The MCP server is ``serial-mcp`` (``serial_mcp.cli``); the engine as a library is ``Engine``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["Engine", "EngineConnection", "SerialMcpError", "SyncEngine", "__version__"]

if TYPE_CHECKING:
    from serial_mcp.api import Engine, EngineConnection, SyncEngine
    from serial_mcp.errors import SerialMcpError


def __getattr__(name: str) -> Any:
    """Imported on first use, so ``serial-mcp --help`` and the CLI start without loading the engine."""
    if name in ("Engine", "EngineConnection", "SyncEngine"):
        from serial_mcp import api

        return getattr(api, name)
    if name == "SerialMcpError":
        from serial_mcp.errors import SerialMcpError

        return SerialMcpError
    raise AttributeError(name)
