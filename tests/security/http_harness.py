"""An in-process streamable-HTTP serial-mcp on a free loopback port, over a fake device, so a test
can run several MCP sessions (several agents) against one server and look at the device."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from serial_mcp.mcp.http import build_http_app
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeDevice, FakeOpener
from serial_mcp.serial.manager import ConnectionManager

TOKEN = "test-token"


@dataclass
class HttpServer:
    url: str
    device: FakeDevice
    manager: ConnectionManager

    @asynccontextmanager
    async def session(self, *, delete: bool = True) -> AsyncIterator[Client]:
        """One MCP session (2025-11-25 era: it has a session id), as one agent would hold it.
        Leaving it sends the session's DELETE, unless ``delete`` is false: then the client just
        goes away (the transport drops) and the server is never told."""
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        transport = streamable_http_client(self.url, http_client=http, terminate_on_close=delete)
        async with http, Client(transport, mode="legacy") as c:
            yield c


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@asynccontextmanager
async def http_server(
    session_idle_timeout: float | None = None, **server_options: Any
) -> AsyncIterator[HttpServer]:
    """``server_options`` go to ``build_server`` (a profile store, a capture store ...);
    ``session_idle_timeout`` (seconds) replaces the SDK's 30 minutes."""
    opener = FakeOpener()
    device = opener.add("dev")
    manager = ConnectionManager(opener)
    server = build_server(manager, **server_options)
    port = _free_port()
    idle = {} if session_idle_timeout is None else {"session_idle_timeout": session_idle_timeout}
    app = build_http_app(server, "127.0.0.1", TOKEN, **idle)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    uv = uvicorn.Server(config)
    task = asyncio.get_running_loop().create_task(uv.serve())
    try:
        while not uv.started:  # uvicorn has no "started" event to await
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        yield HttpServer(f"http://127.0.0.1:{port}/mcp", device, manager)
    finally:
        uv.should_exit = True
        await task
