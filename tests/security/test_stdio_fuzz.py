"""A careless or hostile stdio client: whatever lines it sends, every request gets exactly one answer.

The lines go through the real stdio path in-process (``stdio_serve.screened_stdio`` →
``era_loop.serve`` → the SDK's serving loop): requests of known and unknown methods with odd
params, notifications, requests whose id is not a string or an integer, lines that are not JSON,
JSON that is not an object, nesting past any limit. Each request (a JSON object with a ``method``
and a fresh integer ``id``) must be answered once, by id, within a bound; each request with a bad
id gets a refusal with id null; and a ping after them all must still be answered.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from serial_mcp.mcp import era_loop, stdio_serve
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from tests.raw_rpc import INITIALIZE_PARAMS

BOUND_S = 20.0
METHODS = [
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "notifications/initialized",
    "notifications/cancelled",
    "no/such/method",
    "",
]
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\n\r"), max_size=16)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
TOOL_CALL = st.fixed_dictionaries(
    {"name": st.sampled_from(["read", "write", "transact", "open", "list_ports", "nope", ""]) | TEXT},
    optional={"arguments": st.dictionaries(TEXT, JSONISH, max_size=3) | JSONISH},
)
PARAMS = st.one_of(
    st.just(INITIALIZE_PARAMS),
    st.just({"_meta": MODERN_META}),
    TOOL_CALL,
    TOOL_CALL.map(lambda p: {**p, "_meta": MODERN_META}),
    st.dictionaries(TEXT, JSONISH, max_size=3),
    JSONISH,
)
GARBAGE = st.one_of(
    TEXT,
    st.just("{"),
    st.just('{"jsonrpc":"2.0","id":'),
    st.just("[]"),
    st.just('[{"jsonrpc":"2.0","id":1,"method":"ping"}]'),
    st.just("null"),
    st.just('"just a string"'),
    st.just("[" * 5000 + "]" * 5000),
    st.just('{"a":' * 300 + "1" + "}" * 300),
    JSONISH.map(json.dumps),
)


# Not a string or an integer: such a request is owed a refusal with id null, never silence.
BAD_ID = st.one_of(
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(TEXT, st.integers(), max_size=2),
)
BAD_ID_OWED = -1  # the id a session line owes when its reply must be a bad-id refusal (id null)


@st.composite
def sessions(draw: st.DrawFn) -> list[tuple[str, int | None]]:
    """Lines, each with the id a reply must carry (None: no reply is owed; ``BAD_ID_OWED``: a
    refusal with id null)."""
    lines: list[tuple[str, int | None]] = []
    for i in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["request", "request", "notification", "garbage", "bad id"]))
        if kind == "garbage":
            lines.append((draw(GARBAGE), None))
            continue
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": draw(st.sampled_from(METHODS) | TEXT)}
        if draw(st.booleans()):
            message["params"] = draw(PARAMS)
        rid: int | None = None
        if kind == "request":
            rid = message["id"] = 1000 + i
        elif kind == "bad id":
            message["id"], rid = draw(BAD_ID), BAD_ID_OWED
        lines.append((json.dumps(message), rid))
    return lines


def _is_bad_id_refusal(reply: dict[str, Any]) -> bool:
    error = reply.get("error") or {}
    return (
        "id" in reply
        and reply["id"] is None
        and error.get("code") == -32600
        and "the request's id is" in error.get("message", "")
    )


async def _serve(lines: list[str]) -> list[dict[str, Any]]:
    stdin_done = anyio.Event()
    replies: list[dict[str, Any]] = []
    seen = anyio.Event()

    class Out:
        async def write(self, text: str) -> None:
            nonlocal seen
            replies.append(json.loads(text))
            seen.set()
            seen = anyio.Event()

        async def flush(self) -> None:
            pass

    async def source() -> AsyncIterator[str]:
        for line in lines:
            yield line + "\n"
        await stdin_done.wait()

    server = build_server(ConnectionManager(FakeOpener()))
    low = server._lowlevel_server
    lines = [*lines, json.dumps({"jsonrpc": "2.0", "id": 999_999, "method": "ping"})]  # answered last
    with anyio.fail_after(BOUND_S):
        async with (
            stdio_serve.screened_stdio(source(), Out()) as (read_stream, write_stream),
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(era_loop.serve, low, read_stream, write_stream, low.create_initialization_options())
            while not any(r.get("id") == 999_999 for r in replies):
                await seen.wait()
            stdin_done.set()
    return replies


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
@given(session=sessions())
@pytest.mark.slow
@pytest.mark.timeout(600)  # thousands of lines through a real server
def test_every_request_line_gets_exactly_one_answer(session: list[tuple[str, int | None]]) -> None:
    lines = [line for line, _ in session]
    replies = anyio.run(_serve, lines)
    owed = [rid for _, rid in session if rid is not None and rid != BAD_ID_OWED]
    answered = [r.get("id") for r in replies]
    for rid in owed:
        assert answered.count(rid) == 1, (rid, session, replies)
    refused = sum(map(_is_bad_id_refusal, replies))
    bad_ids = sum(rid == BAD_ID_OWED for _, rid in session)
    garbage = sum(rid is None for _, rid in session)  # a garbage object may carry a bad id too
    assert bad_ids <= refused <= bad_ids + garbage, (session, replies)
    assert answered.count(999_999) == 1
    for reply in replies:
        assert reply.get("jsonrpc") == "2.0" and ("result" in reply) != ("error" in reply), reply


@pytest.mark.parametrize(
    "first",
    [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE_PARAMS},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": MODERN_META}},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    ],
    ids=["handshake", "modern", "no-handshake"],
)
def test_a_first_request_of_any_era_then_garbage_then_a_ping(first: dict[str, Any]) -> None:
    lines = [json.dumps(first), "{", "[]", json.dumps({"jsonrpc": "2.0", "method": "nope"})]
    replies = anyio.run(_serve, lines)
    ids = [r.get("id") for r in replies]
    assert ids.count(1) == 1 and ids.count(999_999) == 1
