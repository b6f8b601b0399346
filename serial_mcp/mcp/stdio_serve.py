"""The stdio transport: screened lines in, replies out, served by the SDK's own loops.

    stdin (fd 0, claimed as the SDK claims it)
      -> stdio_pipes.loop_stdio   lines read on the event loop (no worker thread per message)
      -> line_screen.parse_line   each line parsed once; a line the SDK would drop is answered
      -> InFlight.admit           a flood waits in the pipe, not as tasks in the server
      -> session_streams          hand-over streams (one loop turn shorter than anyio's send)
      -> era_loop.serve           the SDK's dual-era loop, without its relay task
      -> the server (middleware: argument_guard.ArgumentGuard outermost, then the tools)
      -> write_lines              one JSON line per reply, flushed; InFlight.answered
    stdout (fd 1; stray writes to sys.stdout diverted to stderr)

All of it rests on SDK internals (sdk_private.py). On an SDK version that was not verified,
``run_stdio`` serves through the SDK's public ``run_stdio_async`` instead.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeGuard

import anyio
from mcp.server.mcpserver import MCPServer
from mcp_types import JSONRPCResponse

from serial_mcp import messages
from serial_mcp.mcp import era_loop, json_slices, sdk_private, session_streams, stdio_pipes
from serial_mcp.mcp.in_flight import InFlight
from serial_mcp.mcp.line_screen import answer_for_rejected_line, parse_line
from serial_mcp.mcp.sdk_private import SessionMessage

log = logging.getLogger(__name__)

END_OF_INPUT_GRACE_S = 3.0  # longer than the default read/transact timeout (1 s); see below


async def _answered_or_gone(in_flight: InFlight, out: Any, session_over: anyio.Event) -> None:
    """After the end of input: until every request in flight has been answered, the client closed
    our stdout, the session stopped writing, or ``END_OF_INPUT_GRACE_S`` passed. Closing stdin is
    also how a client shuts its server down: a call that runs longer (a stuck 10-minute write) must
    not keep the process, and the port it holds, alive; the session's end answers it instead."""
    gone: Callable[[], Awaitable[None]] | None = getattr(out, "gone", None)  # the threaded path: None
    with anyio.move_on_after(END_OF_INPUT_GRACE_S):
        async with anyio.create_task_group() as tg:

            async def end_on(event: Callable[[], Awaitable[Any]]) -> None:
                await event()
                tg.cancel_scope.cancel()

            if gone is not None:
                tg.start_soon(end_on, gone)
            tg.start_soon(end_on, session_over.wait)
            await in_flight.drained()
            tg.cancel_scope.cancel()


def _is_big_reply(message: Any) -> TypeGuard[JSONRPCResponse]:
    return isinstance(message, JSONRPCResponse) and json_slices.is_big(message.result)


async def _big_reply_text(message: JSONRPCResponse) -> str:
    """A big reply's JSON line (a 4 MiB framed read: ~9 MB), made in slices with a turn of the loop
    between them (json_slices), so the loop serves other sessions meanwhile."""
    parts = []
    for piece in json_slices.response_pieces(message):
        parts.append(piece)
        await anyio.sleep(0)
    return "".join(parts)


@asynccontextmanager
async def screened_stdio(source: AsyncIterable[str], out: Any) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's ``stdio_server`` streams over ``source`` (lines) and ``out`` (``write``/``flush``), with
    each line parsed once: a line the SDK's parser would drop is answered here instead (the SDK's own
    transport would parse a line we had screened a second time, on every request)."""
    read_writer: session_streams.HandOverSendStream[SessionMessage | Exception]
    read_stream: sdk_private.ContextReceiveStream[SessionMessage | Exception]
    write_stream: session_streams.HandOverSendStream[SessionMessage]
    write_reader: sdk_private.ContextReceiveStream[SessionMessage]
    read_writer, read_stream = session_streams.hand_over_streams()
    write_stream, write_reader = session_streams.hand_over_streams()
    in_flight = InFlight()  # a flood of requests waits in the pipe, not as tasks in the server
    session_over = anyio.Event()  # the writer ended: every sender of replies has closed

    async def read_lines() -> None:
        with contextlib.suppress(anyio.ClosedResourceError):
            async with read_writer:
                async for line in source:
                    message = parse_line(line)
                    if message is not None:
                        refused = await in_flight.admit(message)
                        if refused is not None:
                            await write_stream.send(SessionMessage(refused))
                        else:
                            await read_writer.send(SessionMessage(message))
                        continue
                    reply = answer_for_rejected_line(line)
                    if reply is not None:
                        await write_stream.send(SessionMessage(reply))
                # End of input. A client may close stdin after its last request and read on
                # (`printf ... | serial-mcp`): what is owed gets a few seconds to be answered
                # before the session ends (the SDK answers the rest "Connection closed").
                await _answered_or_gone(in_flight, out, session_over)

    async def write_lines() -> None:
        # The loop-served pipe (PipeWriter) queues each line whole in one synchronous write, so a
        # big reply made aside cannot interleave with the others; the threaded fallback could.
        aside_ok = getattr(out, "gone", None) is not None

        async def put(message: Any, text: str) -> None:
            await out.write(text + "\n")
            await out.flush()
            in_flight.answered(message)

        async def put_big(message: JSONRPCResponse) -> None:
            text = await _big_reply_text(message)
            widen: Callable[[], None] | None = getattr(out, "widen", None)
            if widen is not None:
                widen()
            await put(message, text)

        try:
            async with anyio.create_task_group() as aside:
                with contextlib.suppress(anyio.ClosedResourceError):
                    async with write_reader:
                        async for session_message in write_reader:
                            message = session_message.message
                            if not _is_big_reply(message):
                                await put(message, message.model_dump_json(by_alias=True, exclude_unset=True))
                            elif aside_ok:  # made aside: the replies after it need not wait for it
                                aside.start_soon(put_big, message)
                            else:
                                await put_big(message)
        finally:
            session_over.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(read_lines)
        tg.start_soon(write_lines)
        yield read_stream, write_stream


async def run_stdio(server: MCPServer) -> None:
    """Serve ``server`` on stdin/stdout: screened lines, the SDK's loops (see the module doc)."""
    if not sdk_private.VERIFIED:
        sdk_private.warn_unverified()
        await server.run_stdio_async()  # the SDK's public stdio path
        return
    with sdk_private.claimed_stdio() as (buffer, out_buffer):
        async with stdio_pipes.loop_stdio(buffer, out_buffer) as pipes:
            source: Any
            out: Any
            if pipes is not None:  # pipes: served on the loop, no worker thread per message
                source, out = pipes
            else:
                source = anyio.wrap_file(sdk_private.text_stream(buffer, errors="replace"))
                out = anyio.wrap_file(sdk_private.text_stream(out_buffer))
            try:
                async with screened_stdio(source, out) as (read_stream, write_stream):
                    low = sdk_private.lowlevel(server)  # Server.run, without its per-message relay
                    await era_loop.serve(low, read_stream, write_stream, low.create_initialization_options())
            except* (BrokenPipeError, ConnectionResetError):  # the client went away: nothing to answer
                log.info(messages.STDIO_CLIENT_GONE)
