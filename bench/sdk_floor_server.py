"""The SDK's floor for ``bench_transact.py``: a bare MCP server with the least a transact can be.

The official SDK's ``MCPServer`` with its own stdio transport and two tools, nothing of serial-mcp:

* ``list_connections``: returns a one-field model (the trivial call);
* ``transact(connection_id, data, match, timeout_ms)``: ``os.write`` to the PTY, then read it on the
  event loop (``add_reader``) until ``match`` is in the reply — no pump thread, no ring, no cursor,
  no validation beyond the SDK's, a two-field result.

``open(port)`` opens the one port. What serial-mcp's own ``transact`` costs above this server's is
everything serial-mcp adds; what this server's transact costs above its trivial call is the SDK round
trip plus the device's, the floor any server built on the SDK pays on this machine.

    python bench/sdk_floor_server.py   # speaks MCP on stdin/stdout
"""

from __future__ import annotations

import asyncio
import os

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

server = MCPServer("sdk-floor")
_fds: dict[str, int] = {}


class Connection(BaseModel):
    connection_id: str


class Reply(BaseModel):
    data: str
    bytes_written: int


@server.tool()
async def open(port: str) -> Connection:  # the tool is named as serial-mcp names it
    _fds["c1"] = os.open(port, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    return Connection(connection_id="c1")


@server.tool()
async def close(connection_id: str) -> Connection:
    os.close(_fds.pop(connection_id))
    return Connection(connection_id=connection_id)


@server.tool()
async def list_connections() -> Connection:
    return Connection(connection_id=next(iter(_fds), ""))


@server.tool()
async def transact(connection_id: str, data: str, match: str, timeout_ms: int = 1000) -> Reply:
    fd = _fds[connection_id]
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    got = bytearray()
    want = match.encode()

    def readable() -> None:
        try:
            got.extend(os.read(fd, 4096))
        except BlockingIOError:
            return
        if want in got and not done.done():
            done.set_result(None)

    loop.add_reader(fd, readable)
    try:
        sent = os.write(fd, data.encode())
        await asyncio.wait_for(done, timeout_ms / 1000)
    finally:
        loop.remove_reader(fd)
    return Reply(data=got.decode(errors="replace"), bytes_written=sent)


if __name__ == "__main__":
    server.run()
