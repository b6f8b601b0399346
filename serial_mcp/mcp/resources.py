"""Resources (read-only views that never consume bytes or move a cursor) and their notifications.

``serial://ports``, ``serial://connections``, ``serial://captures`` and the templates
``serial://connections/{connection_id}`` and ``serial://connections/{connection_id}/log``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer

from serial_mcp import messages
from serial_mcp.core.eventlog import LogEvent
from serial_mcp.engine.services import Services
from serial_mcp.errors import SerialMcpError
from serial_mcp.mcp import sdk_private
from serial_mcp.mcp.callers import current
from serial_mcp.mcp.engine_loader import load_engine, load_engine_blocking
from serial_mcp.mcp.notify import Notifier
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.ports import PortInfo

PORTS = "serial://ports"
CONNECTIONS = "serial://connections"
CAPTURES = "serial://captures"
HOTPLUG_INTERVAL = 2.0  # seconds between port scans, only while someone could be notified
LOG_EVENTS = 100


def connection_uri(cid: str) -> str:
    return f"{CONNECTIONS}/{cid}"


def log_uri(cid: str) -> str:
    return f"{CONNECTIONS}/{cid}/log"


_Fn = TypeVar("_Fn", bound=Callable[..., Any])


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def register(
    server: MCPServer,
    svc: Services,
    notifier: Notifier,
) -> None:
    captures = svc.captures

    def json_resource(uri: str, name: str, description: str) -> Callable[[_Fn], _Fn]:
        return server.resource(uri, name=name, mime_type="application/json", description=description)

    @json_resource(PORTS, "ports", messages.R_PORTS)
    async def ports() -> str:
        """The same port records as the list_ports tool (one model, serialised one way)."""
        await load_engine()  # a server publishing kept tools loads the engine on first need
        from serial_mcp.engine import port_ops

        listed = await port_ops.ports(svc)
        return _json({"ports": [p.model_dump(mode="json") for p in listed.ports]})

    @json_resource(CONNECTIONS, "connections", messages.R_CONNECTIONS)
    def connections() -> str:  # sync resources run on a worker thread: the import is off the loop
        load_engine_blocking()
        from serial_mcp.engine import port_ops

        return _json(port_ops.list_connections(svc).model_dump())

    @json_resource(CAPTURES, "captures", messages.R_CAPTURES)
    def capture_files() -> str:
        if not captures.enabled:
            return _json({"enabled": False, "captures": [], "hint": messages.CAPTURE_DISABLED})
        return _json({"enabled": True, "captures": [asdict(c) for c in captures.list()]})

    def found(read: Callable[[], Any]) -> str:
        """A connection's resource as ``read`` makes it; an unknown connection is not found."""
        try:
            return _json(read())
        except SerialMcpError as exc:
            raise sdk_private.ResourceNotFoundError(exc.message) from None

    @json_resource(connection_uri("{connection_id}"), "connection", messages.R_CONNECTION)
    def connection(connection_id: str) -> str:
        load_engine_blocking()
        from serial_mcp.engine import port_ops

        return found(lambda: port_ops.get_status(svc, current(), connection_id).model_dump(mode="json"))

    @json_resource(log_uri("{connection_id}"), "connection-log", messages.R_LOG)
    def connection_log(connection_id: str) -> str:
        load_engine_blocking()
        from serial_mcp.engine import log_ops

        def read() -> dict[str, Any]:
            log = log_ops.get_log(svc, current(), connection_id, limit=LOG_EVENTS)
            return {"connection_id": log.connection_id, "events": log.events}

        return found(read)

    def observe(what: str, conn: Connection) -> None:
        notifier.poke(CONNECTIONS)
        notifier.poke(connection_uri(conn.id))
        notifier.poke(PORTS)
        if what == "open":
            cid = conn.id

            def on_event(event: LogEvent, payload: bytes | None) -> None:  # pump thread or loop
                notifier.poke(connection_uri(cid))
                notifier.poke(log_uri(cid))

            from serial_mcp.engine import port_ops  # loaded: the engine opened the port

            port_ops.watch_events(conn, on_event)

    svc.manager.observers.append(observe)


async def watch_ports(port_lister: Callable[[], list[PortInfo]], notifier: Notifier) -> None:
    """Hotplug: rescan ports every few seconds while anyone could be told, and notify on change."""
    previous: list[str] | None = None
    while True:
        if notifier.watched(PORTS):
            try:
                names = sorted(p.name for p in await anyio.to_thread.run_sync(port_lister))
            except Exception:  # a flaky scan must not end the watcher
                names = previous or []
            if previous is not None and names != previous:
                notifier.poke(PORTS)
            previous = names
        await asyncio.sleep(HOTPLUG_INTERVAL)
