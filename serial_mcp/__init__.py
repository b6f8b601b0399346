"""serial-mcp: safe, lossless, fast serial ports for AI agents, bench engineers and CI.

The MCP server is ``serial-mcp`` (``serial_mcp.cli``); the engine as a library is ``Engine``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["Engine", "EngineConnection", "SerialMcpError", "SyncEngine", "__version__"]

if TYPE_CHECKING:
    from serial_mcp.api import Engine, EngineConnection, SyncEngine
    from serial_mcp.errors import SerialMcpError


def __getattr__(name: str) -> Any:
    """Imported on first use, so ``serial-mcp --help`` and the CLI start without loading the engine."""
    if name in ("Engine", "EngineConnection", "SyncEngine"):
        # by name, not an import statement: every module imports this package for messages, and
        # the layer contracts must not see them all depend on the top-level API
        return getattr(importlib.import_module("serial_mcp.api"), name)
    if name == "SerialMcpError":
        from serial_mcp.errors import SerialMcpError

        return SerialMcpError
    raise AttributeError(name)
