"""build_server: the MCP front door onto a ConnectionManager (tools stay thin: validate → call → shape)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer

from serial_mcp import messages
from serial_mcp.engine.access import AccessPolicy
from serial_mcp.engine.services import Services
from serial_mcp.mcp import argument_guard, prompts, resources, sdk_private
from serial_mcp.mcp.engine_loader import EngineTools
from serial_mcp.mcp.notify import CountingBus, Notifier
from serial_mcp.mcp.schema import slim_tool_schemas
from serial_mcp.mcp.tool_cache import ToolCache
from serial_mcp.mcp.toolkit import ToolRegistry
from serial_mcp.serial.firmware_elf import ElfScope
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.ports import PortInfo, list_system_ports
from serial_mcp.store.captures import CaptureStore
from serial_mcp.store.profiles import ProfileStore
from serial_mcp.version import __version__


def build_server(
    manager: ConnectionManager,
    *,
    port_lister: Callable[[], list[PortInfo]] = list_system_ports,
    captures: CaptureStore | None = None,
    read_only: bool = False,
    profiles: ProfileStore | None = None,
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING",
    elf_scope: ElfScope | None = None,
    tool_cache: ToolCache | None = None,
    held_idle_s: float = 60.0,
) -> MCPServer:
    """An MCPServer whose tools drive ``manager``; tests pass a manager over a fake or PTY opener.
    ``tool_cache``: publish the tools' schemas kept by an earlier launch of the same code, or keep
    this launch's (mcp/tool_cache.py; the CLI server passes one). ``held_idle_s``: how long a
    connection a call opened by port stays open unused (engine/held.py)."""

    captures = captures or CaptureStore(None)
    bus = CountingBus()
    notifier = Notifier(bus)

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[dict[str, Any]]:
        notifier.bind(asyncio.get_running_loop())
        watcher = asyncio.get_running_loop().create_task(resources.watch_ports(port_lister, notifier))
        try:
            yield {"manager": manager, "notifier": notifier}
        finally:
            watcher.cancel()
            await manager.close_all()

    with sdk_private.logging_already_configured():
        server: MCPServer = MCPServer(
            "serial-mcp",
            version=__version__,
            instructions=messages.SERVER_INSTRUCTIONS,
            lifespan=lifespan,
            log_level=log_level,
            subscriptions=bus,
            middleware=[advertise_list_changed],
        )
    notifier.install(server)
    svc = Services(manager, captures, profiles, port_lister, AccessPolicy(read_only=read_only))
    svc.held_idle_s = held_idle_s
    if elf_scope is not None:
        svc.elf_scope = elf_scope
    resources.register(server, svc, notifier)
    prompts.register(server, svc, (lambda: [p.name for p in profiles.list()]) if profiles else list)
    if not sdk_private.VERIFIED:
        tool_cache = None  # it registers tools through the SDK's insides: only on the verified SDK
    kept = tool_cache.load() if tool_cache is not None else None
    reg = ToolRegistry(server)
    if kept is not None:  # published as an earlier launch of this code built them; the engine later
        engine = EngineTools(svc)
        for name, entry in kept.items():
            reg.kept(name, entry, engine.loader(name))
        reg.on_listed = engine.load_soon
        server.engine_tools = engine  # type: ignore[attr-defined]  # for tests and diagnostics
    else:
        from serial_mcp.mcp import tools  # the engine's operation table: every tool built from it

        tools.register(reg, svc)
    server.middleware.append(reg.guard())
    drop_idle_tracing(server)
    argument_guard.install(server)  # malformed arguments answered, not dropped
    if kept is None:  # kept schemas were slimmed before they were kept, and so were reused ones
        slim_tool_schemas(server, skip=reg.reused)
        reg.remember_built()
        if tool_cache is not None:
            tool_cache.save(server, reg.arg_names, reg.mutating)
    server.notifier = notifier  # type: ignore[attr-defined]  # for tests and diagnostics
    return server


async def advertise_list_changed(ctx: Any, call_next: Any) -> Any:
    """2025-era clients are told resources/tools/prompts may change (MCPServer has no switch for it)."""
    result = await call_next(ctx)
    if ctx.method == "initialize" and isinstance(result, dict):
        for cap in ("tools", "resources", "prompts"):
            if cap in result.get("capabilities", {}):
                result["capabilities"][cap]["listChanged"] = True
    return result


def drop_idle_tracing(server: MCPServer) -> None:
    """Drop the SDK's OpenTelemetry middleware when nobody collects its spans.

    It opens a span for every message even when no tracer provider is installed (the spans then go
    nowhere), at about 0.1 ms per tool call over stdio here. Installed, as by
    ``opentelemetry-instrument python -m serial_mcp`` or by a host process before it builds the
    server, every message still gets its span.
    """
    from opentelemetry import trace

    if not sdk_private.VERIFIED:
        return  # keep the SDK's middleware as it is

    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return
    chain = server.middleware  # the SDK's list itself: change it in place
    chain[:] = [m for m in chain if not isinstance(m, sdk_private.OpenTelemetryMiddleware)]


def keep_tools() -> int:
    """``python -m serial_mcp.mcp.server``: build the tools and keep them (mcp/tool_cache.py; for an
    installer, run as the package's owner; the server keeps them itself when it may)."""
    from serial_mcp.serial.fake import FakeOpener

    cache = ToolCache()
    cache.path.unlink(missing_ok=True)
    build_server(ConnectionManager(FakeOpener()), port_lister=list, tool_cache=cache)
    kept = cache.load() is not None
    print(f"{'kept' if kept else 'NOT kept (not the package owner?)'}: {cache.path}", file=sys.stderr)
    return 0 if kept else 1


if __name__ == "__main__":
    sys.exit(keep_tools())
