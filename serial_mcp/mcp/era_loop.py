"""The SDK's dual-era serving loop for one stdio connection, without its relay task.

``Server.run`` (``mcp.server.runner.serve_dual_era_loop``) peeks at the client's first request to
choose the protocol era (a 2026-07-28 envelope, or the ``initialize`` handshake), and must then
give the chosen loop that request again. It does so by starting a task that copies every later
message, for the whole connection, from the transport's stream into a second one: two more
event-loop turns and a task's work on every request, 0.10–0.13 ms per tool call over stdio here.

``serve`` makes the same choice the same way and hands the chosen loop a
``session_streams.ReplayReceiveStream``:
the peeked messages first, then the transport's stream itself. The serving loops are the SDK's own
(``_serve_legacy_stream`` and ``_serve_modern_stream``, through ``sdk_private``).
"""

from __future__ import annotations

import contextvars
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.models import InitializationOptions

from serial_mcp.mcp import sdk_private
from serial_mcp.mcp.sdk_private import SessionMessage
from serial_mcp.mcp.session_streams import ReplayReceiveStream

Item = SessionMessage | Exception


async def serve(
    server: Server[Any],
    read_stream: sdk_private.ContextReceiveStream[Item],
    write_stream: sdk_private.WriteStream[SessionMessage],
    init_options: InitializationOptions,
) -> None:
    """``server.run(read_stream, write_stream, init_options)``, with the era chosen without a relay."""
    async with server.lifespan(server) as lifespan_state:
        try:
            lead: list[tuple[contextvars.Context, Item]] = []
            opening: types.JSONRPCRequest | None = None
            try:
                async for item in read_stream:
                    if isinstance(item, SessionMessage) and isinstance(item.message, types.JSONRPCRequest):
                        opening = item.message
                    elif len(lead) >= sdk_private.PRE_REQUEST_REPLAY_LIMIT:
                        continue  # as the SDK: frames beyond the limit before a request are dropped
                    lead.append((read_stream.last_context or contextvars.copy_context(), item))
                    if opening is not None:
                        break
            except anyio.ClosedResourceError:
                pass  # the receive end closed under us: end of input, as in the SDK
            replayed = ReplayReceiveStream(lead, read_stream)
            modern = (
                opening is not None
                and opening.method != "initialize"
                and sdk_private.has_modern_envelope(opening.params)
            )
            if modern:
                await sdk_private.serve_modern_stream(
                    server, replayed, write_stream, lifespan_state=lifespan_state, raise_exceptions=False
                )
            else:
                await sdk_private.serve_legacy_stream(
                    server,
                    replayed,
                    write_stream,
                    lifespan_state=lifespan_state,
                    session_id=None,
                    init_options=init_options,
                    raise_exceptions=False,
                )
        finally:
            await read_stream.aclose()
            await write_stream.aclose()
