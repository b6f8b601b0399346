"""The stdio transport parses each line once: requests reach the session, unparseable ones are answered."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from serial_mcp.mcp import stdio_pipes, stdio_serve
from tests.raw_rpc import INITIALIZE

pytestmark = pytest.mark.anyio


class CountingAdapter:
    """``types.jsonrpc_message_adapter`` with a count of the lines it parsed."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.parsed = 0

    def validate_json(self, *args: Any, **kwargs: Any) -> Any:
        self.parsed += 1
        return self.real.validate_json(*args, **kwargs)


class Out:
    def __init__(self) -> None:
        self.lines: list[str] = []

    async def write(self, text: str) -> None:
        self.lines.append(text)

    async def flush(self) -> None:
        pass


async def _source(lines: list[str]) -> AsyncIterator[str]:
    for line in lines:
        yield line


def _call(rid: int, arguments: str) -> str:
    return (
        f'{{"jsonrpc":"2.0","id":{rid},"method":"tools/call",'
        f'"params":{{"name":"read","arguments":{arguments}}}}}\n'
    )


HARNESS = {"answered_by": "the test, as the SDK's session would"}


async def _serve(lines: list[str]) -> tuple[list[Any], list[dict[str, Any]]]:
    """The lines through screened stdio to a stand-in session that answers every request it gets
    (the end of input waits for what is owed); returns what it got and the screen's own replies."""
    out = Out()
    received: list[Any] = []
    async with stdio_serve.screened_stdio(_source(lines), out) as (read_stream, write_stream):
        async with read_stream:
            async for item in read_stream:
                received.append(item)
                if isinstance(item, SessionMessage) and isinstance(item.message, types.JSONRPCRequest):
                    answer = types.JSONRPCResponse(jsonrpc="2.0", id=item.message.id, result=HARNESS)
                    await write_stream.send(SessionMessage(answer))
        await write_stream.aclose()
    replies = [json.loads(line) for line in out.lines]
    return received, [r for r in replies if r.get("result") != HARNESS]


async def test_each_line_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = CountingAdapter(types.jsonrpc_message_adapter)
    monkeypatch.setattr(types, "jsonrpc_message_adapter", counter)
    lines = [json.dumps(INITIALIZE) + "\n", _call(2, '{"connection_id":"c1"}'), _call(3, "{}")]
    received, replies = await _serve(lines)
    assert counter.parsed == len(lines)  # the SDK's own transport would parse each a second time
    ids = [getattr(m.message, "id", None) for m in received if isinstance(m, SessionMessage)]
    assert ids == [1, 2, 3]
    assert replies == []


async def test_a_line_the_parser_refuses_is_answered_by_id() -> None:
    surrogate = _call(7, '{"connection_id":"\\ud800"}')
    deep = _call(8, "[" * 300 + "]" * 300)
    received, replies = await _serve([surrogate, "\n", deep, "{not json\n"])
    assert received == []  # nothing the session could not parse reaches it
    by_id = {r.get("id"): r for r in replies}
    assert by_id[7]["result"]["isError"] is True
    assert by_id[7]["result"]["structuredContent"]["error"]["code"] == "invalid_argument"
    assert by_id[8]["result"]["structuredContent"]["error"]["code"] == "invalid_argument"
    assert by_id[None]["error"]["code"] == types.PARSE_ERROR
    assert len(replies) == 3  # the blank line gets no answer


async def test_an_overlong_line_is_answered_without_being_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = CountingAdapter(types.jsonrpc_message_adapter)
    monkeypatch.setattr(types, "jsonrpc_message_adapter", counter)
    head = stdio_pipes.OverlongLine(_call(9, '{"connection_id":"' + "x" * 100), limit=64)
    received, replies = await _serve([head])
    assert received == [] and counter.parsed == 0
    assert replies[0]["id"] == 9
    assert "longer than" in replies[0]["result"]["structuredContent"]["error"]["message"]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_request_reaches_a_waiting_server_one_loop_turn_after_its_line(anyio_backend: str) -> None:
    """No checkpoint turn between parsing a line and handing it to a serving loop that waits for it
    (the reader's context still travels with it, as on the SDK's own stdio transport)."""
    import asyncio
    import contextvars

    tag: contextvars.ContextVar[str] = contextvars.ContextVar("tag", default="server")
    arrived = asyncio.Event()

    async def source() -> AsyncIterator[str]:
        tag.set("reader")
        await arrived.wait()
        yield json.dumps(INITIALIZE) + "\n"

    async with stdio_serve.screened_stdio(source(), Out()) as (read_stream, write_stream):
        got = asyncio.ensure_future(read_stream.receive())
        for _ in range(5):  # reader and server both waiting
            await asyncio.sleep(0)
        arrived.set()
        turns = 0
        while not got.done():
            await asyncio.sleep(0)
            turns += 1
        message = got.result()
        assert isinstance(message, SessionMessage) and isinstance(message.message, types.JSONRPCRequest)
        assert turns == 2  # the reader's turn, then the server's: no turn in between
        assert read_stream.last_context is not None and read_stream.last_context[tag] == "reader"
        await read_stream.aclose()
        await write_stream.aclose()


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_reply_reaches_the_waiting_writer_without_a_checkpoint_turn(anyio_backend: str) -> None:
    """The session's send hands a reply to the stdout writer that waits for it, in the same turn."""
    import asyncio

    out = Out()
    written = asyncio.Event()
    real_write = out.write

    async def write(text: str) -> None:
        await real_write(text)
        written.set()

    out.write = write  # type: ignore[method-assign]

    stdin_closed = asyncio.Event()

    async def idle() -> AsyncIterator[str]:  # no request until the end, then end of input
        await stdin_closed.wait()
        nothing: tuple[str, ...] = ()
        for line in nothing:  # an async generator that yields nothing
            yield line

    async with stdio_serve.screened_stdio(idle(), out) as (read_stream, write_stream):
        for _ in range(5):  # the writer waits for a reply
            await asyncio.sleep(0)
        reply = types.JSONRPCResponse(jsonrpc="2.0", id=7, result={})
        sent = asyncio.ensure_future(write_stream.send(SessionMessage(reply)))
        turns = 0
        while not written.is_set():
            await asyncio.sleep(0)
            turns += 1
        assert sent.done() and turns == 2  # the sender's turn, then the writer's: none in between
        assert json.loads(out.lines[0]) == {"jsonrpc": "2.0", "id": 7, "result": {}}
        stdin_closed.set()
        await write_stream.aclose()
        await read_stream.aclose()
