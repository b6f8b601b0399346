"""era_loop.serve: the SDK's era choice for a stdio connection, with no relay task per message."""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcp.shared._context_streams import ContextReceiveStream
from mcp.shared.message import SessionMessage

from serial_mcp.mcp import era_loop, line_screen, session_streams, stdio_serve
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from tests.raw_rpc import INITIALIZE, INITIALIZED

pytestmark = pytest.mark.anyio

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


class Out:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.changed = anyio.Event()

    async def write(self, text: str) -> None:
        self.lines.append(json.loads(text))
        self.changed.set()
        self.changed = anyio.Event()

    async def flush(self) -> None:
        pass


def _relay_running() -> bool:
    """Whether a task runs the SDK's relay (``replay_then_relay``) right now."""
    for task in asyncio.all_tasks():
        coro: Any = task.get_coro()
        while coro is not None:
            if getattr(coro, "__qualname__", "").endswith("replay_then_relay"):
                return True
            coro = getattr(coro, "cr_await", None)
    return False


async def _session(requests: list[dict[str, Any]], want: set[int]) -> tuple[list[dict[str, Any]], bool]:
    """Serve ``requests`` (one line each) until replies to every id in ``want`` are out; also say
    whether the SDK's relay task ran meanwhile."""
    stdin_done = anyio.Event()

    async def source() -> AsyncIterator[str]:
        for request in requests:
            yield json.dumps(request) + "\n"
        await stdin_done.wait()

    server = build_server(ConnectionManager(FakeOpener()))
    low = server._lowlevel_server
    out = Out()
    relayed = False
    with anyio.fail_after(20):
        async with (
            stdio_serve.screened_stdio(source(), out) as (read_stream, write_stream),
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(era_loop.serve, low, read_stream, write_stream, low.create_initialization_options())
            while not want <= {line.get("id") for line in out.lines}:
                relayed = relayed or _relay_running()
                await out.changed.wait()
            relayed = relayed or _relay_running()
            stdin_done.set()  # end of input: the loop ends
    return out.lines, relayed


async def test_a_handshake_connection_is_served_without_a_relay_task() -> None:
    tools = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    modern = {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": MODERN_META}}
    lines, relayed = await _session([INITIALIZE, INITIALIZED, tools, modern], {1, 2, 3})
    by_id = {line["id"]: line for line in lines}
    assert by_id[1]["result"]["protocolVersion"] == "2025-11-25"
    assert any(t["name"] == "transact" for t in by_id[2]["result"]["tools"])
    assert by_id[3]["error"]["code"] == -32600  # an enveloped request on a handshake connection
    assert not relayed


async def test_an_enveloped_first_request_opens_a_modern_connection() -> None:
    tools = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": MODERN_META}}
    init = {**INITIALIZE, "id": 2}
    lines, relayed = await _session([tools, init], {1, 2})
    by_id = {line["id"]: line for line in lines}
    assert any(t["name"] == "transact" for t in by_id[1]["result"]["tools"])
    assert "initialize" in by_id[2]["error"]["message"]  # the handshake is refused once modern
    assert not relayed


async def test_frames_before_the_first_request_come_first_with_their_contexts() -> None:
    send: session_streams.HandOverSendStream[SessionMessage | Exception]
    receive: ContextReceiveStream[SessionMessage | Exception]
    send, receive = session_streams.hand_over_streams()
    tag: contextvars.ContextVar[str] = contextvars.ContextVar("tag")
    lead_ctx = contextvars.copy_context()
    lead_ctx.run(tag.set, "lead")
    early = SessionMessage(line_screen.parse_line(json.dumps(INITIALIZED)))  # type: ignore[arg-type]
    later = SessionMessage(line_screen.parse_line(json.dumps(INITIALIZE)))  # type: ignore[arg-type]
    replay: session_streams.ReplayReceiveStream[SessionMessage | Exception]
    replay = session_streams.ReplayReceiveStream([(lead_ctx, early)], receive)
    async with anyio.create_task_group() as tg:
        tag.set("later")
        tg.start_soon(send.send, later)
        first = await replay.receive()
        assert first is early and replay.last_context is not None and replay.last_context[tag] == "lead"
        second = await replay.receive()
        assert second is later and replay.last_context is not None and replay.last_context[tag] == "later"
    await send.aclose()
    with pytest.raises(anyio.EndOfStream):
        await replay.receive()
    await replay.aclose()


async def test_many_frames_before_the_first_request_are_bounded_and_the_request_still_served() -> None:
    """A client that chatters before its first request: the SDK keeps at most its pre-request limit
    of those frames (the rest are dropped, as in ``Server.run``) and still serves the request."""
    from mcp.server import runner as sdk_runner

    chatter = [INITIALIZED] * (sdk_runner._PRE_REQUEST_REPLAY_LIMIT + 5)
    lines, relayed = await _session([*chatter, INITIALIZE], {1})
    assert [line["id"] for line in lines if "id" in line] == [1]
    assert lines[-1]["result"]["protocolVersion"] == "2025-11-25"
    assert not relayed
