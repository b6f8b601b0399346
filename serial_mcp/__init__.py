"""serial-mcp: safe, lossless, fast serial ports for AI agents, bench engineers and CI.

The MCP server is ``serial-mcp`` (``serial_mcp.cli``); the engine as a library is ``Engine``
(``SyncEngine`` blocking). Its results are the models of ``serial_mcp.results``; its failures are
``SerialMcpError`` and its families (``PortError``, ``AccessError`` …) with a stable ``ErrorCode``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from serial_mcp.version import __version__

_API = ("Engine", "EngineConnection", "SyncConnection", "SyncEngine")
__all__ = [
    "AccessError",
    "Conflict",
    "DeviceError",
    "Engine",
    "EngineConnection",
    "ErrorCode",
    "InvalidArgument",
    "LimitReached",
    "NotFound",
    "OperationTimeout",
    "PortError",
    "SerialMcpError",
    "StorageError",
    "SyncConnection",
    "SyncEngine",
    "__version__",
    "results",
]

if TYPE_CHECKING:
    from serial_mcp.api import Engine, EngineConnection, SyncConnection, SyncEngine
    from serial_mcp.engine import results
    from serial_mcp.errors import (
        AccessError,
        Conflict,
        DeviceError,
        InvalidArgument,
        LimitReached,
        NotFound,
        OperationTimeout,
        PortError,
        StorageError,
    )


def __getattr__(name: str) -> Any:
    """Imported on first use, so ``serial-mcp --help`` and the CLI start without loading the engine.
    By name, not an import statement: every module imports this package for messages, and the layer
    contracts must not see them all depend on the top-level API."""
    if name in _API:
        return getattr(importlib.import_module("serial_mcp.api"), name)
    if name == "results":
        return importlib.import_module("serial_mcp.engine.results")
    if name in __all__:  # the error classes and ErrorCode
        return getattr(importlib.import_module("serial_mcp.errors"), name)
    raise AttributeError(name)
