"""Prompts (diagnose_port, interactive_terminal) and argument completion."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import anyio
import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.prompts.base import UserMessage
from pydantic import Field

from serial_mcp import messages
from serial_mcp.core.presets import preset_names
from serial_mcp.engine.services import Services
from serial_mcp.mcp.engine_loader import load_engine

MAX_COMPLETIONS = 100


def register(
    server: MCPServer,
    svc: Services,
    profile_names: Callable[[], list[str]] = list,
) -> None:
    captures = svc.captures

    def connections() -> list[tuple[str, str]]:
        from serial_mcp.engine import port_ops  # loaded by complete()

        return [(c.connection_id, c.port) for c in port_ops.list_connections(svc).connections]

    @server.prompt(title="Diagnose a serial port")
    def diagnose_port(port: Annotated[str, Field(description=messages.P_PORT)]) -> list[UserMessage]:
        """Identify an unknown device on a port step by step, using serial-mcp's tools."""
        return [UserMessage(messages.PROMPT_DIAGNOSE.format(port=port))]

    @server.prompt(title="Act as a serial terminal")
    def interactive_terminal(
        connection_id: Annotated[str, Field(description=messages.P_CONNECTION_ID)],
    ) -> list[UserMessage]:
        """Work an open connection like a terminal: send what the user types, show what the device says."""
        return [UserMessage(messages.PROMPT_TERMINAL.format(connection_id=connection_id))]

    async def complete(
        ref: types.PromptReference | types.ResourceTemplateReference,
        argument: types.CompletionArgument,
        context: types.CompletionContext | None,
    ) -> types.Completion | None:
        name, prefix = argument.name, argument.value or ""
        values: list[str]
        await load_engine()  # a server publishing kept tools loads the engine on first need
        from serial_mcp.engine import lab_ports

        if name == "port":
            values = [p.name for p in svc.port_lister()] + [port for _, port in connections()]
            if prefix.startswith("labgrid://") or (prefix and "labgrid://".startswith(prefix)):  # issue 25
                values += await anyio.to_thread.run_sync(lab_ports.place_urls, svc)
        elif name in ("connection_id", "id"):
            values = [v for pair in connections() for v in pair]
        elif name in ("profile", "profile_name"):
            values = profile_names()
        elif name in ("path", "capture", "file"):
            values = [c.name for c in captures.list()] if captures.enabled else []
        elif name == "protocol":
            values = [*preset_names(), "raw"]
        else:
            return None
        matches = sorted({v for v in values if v.startswith(prefix)})
        return types.Completion(
            values=matches[:MAX_COMPLETIONS], total=len(matches), has_more=len(matches) > MAX_COMPLETIONS
        )

    server.completion()(complete)  # type: ignore[no-untyped-call]  # the SDK's decorator is untyped
