"""Every private name of the MCP SDK that serial-mcp uses, in one place, checked against the one
SDK version they were verified on.

What each buys is measured and written down in docs/architecture.md ("The SDK's private names").
The rest of ``mcp/`` reaches the SDK's insides only through this module. When the installed
``mcp`` is not ``VERIFIED_MCP`` (or a name below has gone), ``VERIFIED`` is False and the server
takes the SDK's public serving path instead: plain ``MCPServer.run_stdio_async`` (the SDK's own
stdio transport, its own era relay, its tracing middleware kept, no legacy ``resources/subscribe``
recipe), logging ``messages.SDK_UNVERIFIED`` once. tests/mcp/test_sdk_private.py fails on a new
pin with "re-verify sdk_private.py", and shows the fallback serving.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import logging
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, BinaryIO, Final

# Names the SDK's public API takes or raises but that no ``__all__`` of its exports (needed on any
# version: an SDK without them stops at import). ``MCPServer`` imports every one of their modules.
from mcp.client.stdio import get_default_environment
from mcp.server.context import HandlerResult
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata, func_metadata
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.message import SessionMessage

from serial_mcp import messages

if TYPE_CHECKING:
    from mcp.server.lowlevel.server import Server
    from mcp.server.mcpserver import MCPServer

log = logging.getLogger(__name__)

VERIFIED_MCP: Final = "2.3.0"


def installed_mcp() -> str:
    try:
        return importlib.metadata.version("mcp")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree
        return "unknown"


INSTALLED_MCP: Final = installed_mcp()

try:
    # The dual-era serving loop without its relay task (era_loop.py): 0.10-0.13 ms a call.
    from mcp.server import runner as _runner

    # The SDK's stdio fd claim and text wrappers (stdio_serve.py): same fd 0/1 handling as the SDK.
    from mcp.server import stdio as _stdio

    # Its tracing middleware, dropped when no tracer provider listens (server.py): ~0.1 ms a call.
    from mcp.server._otel import OpenTelemetryMiddleware

    # The context streams the SDK's transports hand its session (session_streams.py).
    from mcp.shared._context_streams import ContextReceiveStream
    from mcp.shared._stream_protocols import WriteStream

    PRE_REQUEST_REPLAY_LIMIT: int = _runner._PRE_REQUEST_REPLAY_LIMIT
    _has_modern_envelope: Callable[[Mapping[str, Any] | None], bool] = _runner._has_modern_envelope
    serve_legacy_stream = _runner._serve_legacy_stream
    serve_modern_stream = _runner._serve_modern_stream
    _claim_fd = _stdio._claim_fd
    _open_stdin_diversion = _stdio._open_stdin_diversion
    _open_stdout_diversion = _stdio._open_stdout_diversion
    _UnownedTextWrapper = _stdio._UnownedTextWrapper
    _present = True
except (ImportError, AttributeError):  # pragma: no cover - only on an SDK these names left
    _present = False

VERIFIED: Final = _present and INSTALLED_MCP == VERIFIED_MCP

__all__ = [
    "INSTALLED_MCP",
    "VERIFIED",
    "VERIFIED_MCP",
    "ContextReceiveStream",
    "FuncMetadata",
    "HandlerResult",
    "OpenTelemetryMiddleware",
    "ResourceNotFoundError",
    "SessionMessage",
    "ToolError",
    "TransportSecuritySettings",
    "WriteStream",
    "func_metadata",
    "get_default_environment",
]


def has_modern_envelope(params: Mapping[str, Any] | None) -> bool:
    """Does a first request carry the 2026-07-28 envelope (the SDK's own test)?"""
    return _has_modern_envelope(params)


def lowlevel(server: MCPServer) -> Server[Any]:
    """The low-level ``Server`` inside an ``MCPServer`` (no public accessor)."""
    low: Server[Any] = server._lowlevel_server
    return low


def tools_of(server: MCPServer) -> list[Any]:
    """The server's registered ``Tool`` objects (the tool manager has no public accessor)."""
    tools: list[Any] = server._tool_manager.list_tools()
    return tools


def tool_of(server: MCPServer, name: str) -> Any:
    """The server's registered ``Tool`` named ``name`` (None when there is none)."""
    return server._tool_manager.get_tool(name)


def has_listeners(bus: Any) -> bool:
    """Does anyone listen on the SDK's ``InMemorySubscriptionBus`` (no public accessor)?"""
    return bool(bus._listeners)


def add_built_tool(server: MCPServer, tool: Any) -> None:
    """Register a ``Tool`` built without ``Tool.from_function`` (tool_cache.py: the kept schemas,
    ~0.15 s of start-up); ``ToolManager.add_tool`` only takes a function."""
    server._tool_manager._tools[tool.name] = tool


@contextlib.contextmanager
def logging_already_configured() -> Iterator[None]:
    """``MCPServer()`` calls the SDK's ``configure_logging``, which imports rich (~3 MiB of RSS and
    ~40 ms of start-up) to build a handler that ``logging.basicConfig`` then drops, because the
    root logger has one already (the CLI configures logging first). With a root handler in place,
    skip the call: the outcome is the same, without the import."""
    from mcp.server.mcpserver import server as _mcpserver

    original = getattr(_mcpserver, "configure_logging", None)
    if original is None or not logging.getLogger().handlers:
        yield
        return
    _mcpserver.configure_logging = lambda *args, **kwargs: None  # type: ignore[attr-defined]
    try:
        yield
    finally:
        _mcpserver.configure_logging = original  # type: ignore[attr-defined]


def client_connection(ctx: Any) -> Any:
    """The per-client MCP connection of a request context (no public accessor); None without one."""
    return getattr(getattr(ctx, "session", None), "_connection", None)


@contextlib.contextmanager
def claimed_stdio() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """fd 0 and fd 1 claimed as the SDK's stdio transport claims them (stray writes to
    ``sys.stdout`` diverted to stderr, so nothing but protocol reaches stdout); restored on exit."""
    buffer, restore = _claim_fd(0, sys.stdin, "rb", _open_stdin_diversion)
    out_buffer, restore_out = _claim_fd(1, sys.stdout, "wb", _open_stdout_diversion)
    try:
        yield buffer, out_buffer
    finally:
        if restore_out is not None:
            restore_out()
        if restore is not None:
            restore()


def text_stream(buffer: BinaryIO, *, errors: str = "strict") -> Any:
    """A UTF-8 text view of ``buffer`` that does not close it (the SDK's wrapper)."""
    return _UnownedTextWrapper(buffer, encoding="utf-8", errors=errors)


_warned = False


def warn_unverified() -> None:
    """Say once, on stderr, that the public path serves because this SDK was not verified."""
    global _warned
    if not _warned:
        _warned = True
        log.warning(messages.SDK_UNVERIFIED.format(installed=INSTALLED_MCP, verified=VERIFIED_MCP))
