"""Fuzzing the tool boundary: every tool gets argument objects of the wrong types, sizes and encodings
(built from its own ``inputSchema`` in ``tools/list``), mixed with plausible ones.

Each call must be answered within a bound — with a structured error (a stable code, never
``internal_error``) or a valid structured result — and ``tools/list`` must still answer after it.
In-process server over a FakeOpener; about 30 examples per tool.
"""

from __future__ import annotations

import re
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.store.captures import CaptureStore
from serial_mcp.store.profiles import ProfileStore
from tests.leaks import describe, threads_left

pytestmark = [
    pytest.mark.slow,
    pytest.mark.threads_outlive_the_test("the module's one server reopens its port when a call closes it"),
]

CALL_BOUND_S = 30.0  # far above any wait a generated argument may ask for (all kept under 1 s)
CODE = re.compile(r"^[a-z][a-z0-9_]*$")
# Tools that wait for a peer by design (XMODEM's start timeout): fewer examples, and no valid payloads
SLOW = {"file_transfer", "detect_baud"}

TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=24)  # no lone surrogates in-process
NASTY_TEXT = st.one_of(
    st.just(""),
    st.just("x" * 200_000),
    st.just("\x00\x01\x1b[2J\x7f"),
    st.just("../../../../etc/passwd"),
    st.just("\u202e\ufeff\U0001f600 ü ☃"),
    st.just("socket://127.0.0.1:1"),
    st.just("rfc2217://[::1"),
    TEXT,
)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)


def _deep(n: int) -> Any:
    value: Any = 0
    for _ in range(n):
        value = {"a": value}
    return value


HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63),
    st.sampled_from([-1, 0, 2**31, 2**53 + 1, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    NASTY_TEXT,
    st.lists(JSONISH, max_size=5),
    st.dictionaries(TEXT, JSONISH, max_size=5),
    st.just(_deep(60)),
    st.just(list(range(10_000))),
)
GOOD_STRINGS = {
    "connection_id": ["board"],
    "port": ["board", "nope", "sim://echo"],
    "data": ["AT\r", "00ff", "aGVsbG8="],
    "path": ["fuzz.jsonl", "a b.jsonl"],
    "name": ["bench", "fuzz-profile"],
    "profile": ["bench"],
    "algorithm": ["crc16_modbus", "crc32", "lrc", "sum8"],
    "match": ["OK", "re:^O"],
    "cursor": ["logger", "default"],
    "from": ["now", "buffer_start", "cursor"],
}


def _small_int(name: str) -> st.SearchStrategy[int]:
    if name.endswith("_ms") or name in ("timeout", "window"):
        return st.integers(0, 300)
    return st.integers(0, 70_000)


def typed(schema: dict[str, Any], name: str) -> st.SearchStrategy[Any]:
    """A plausible value of ``schema`` (bounded so no call may wait long)."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    kind = schema.get("type")
    if kind == "integer":
        return _small_int(name)
    if kind == "number":
        return st.sampled_from([1, 1.5, 2, 0.5])
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "string":
        good = GOOD_STRINGS.get(name)
        return st.sampled_from(good) | TEXT if good else TEXT
    if kind == "array":
        return st.lists(typed(schema.get("items", {}), name), max_size=3)
    if kind == "object":
        return st.dictionaries(TEXT, JSONISH, max_size=3)
    return JSONISH


def value_for(schema: dict[str, Any], name: str) -> st.SearchStrategy[Any]:
    options = schema.get("anyOf") or [schema]
    return st.one_of(*(typed(o, name) for o in options), HOSTILE)


def arguments(tool: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    props: dict[str, Any] = tool["inputSchema"].get("properties", {})
    required = set(tool["inputSchema"].get("required", []))
    strategies = {name: value_for(schema, name) for name, schema in props.items()}
    if tool["name"] in SLOW:  # hostile values only: a valid start would wait for the peer
        strategies = {n: HOSTILE for n in props}
    base = st.fixed_dictionaries(
        {n: s for n, s in strategies.items() if n in required},
        optional={n: s for n, s in strategies.items() if n not in required},
    )
    extra = st.dictionaries(st.sampled_from(["baudrate", "x", "__proto__", ""]), JSONISH, max_size=1)
    return st.one_of(base, st.tuples(base, extra).map(lambda p: {**p[1], **p[0]}))


class Harness:
    """One in-process server on a private event loop (a blocking portal), shared by every example."""

    def __init__(self, portal: anyio.from_thread.BlockingPortal, workdir: Path) -> None:
        self.portal = portal
        opener = FakeOpener()
        opener.add("board", lambda data: b"\r\nOK\r\n")
        profiles = ProfileStore(workdir / "profiles.toml")
        profiles.load()
        self.manager = ConnectionManager(opener, max_ring_memory=64 << 20)
        server = build_server(self.manager, captures=CaptureStore(workdir / "captures"), profiles=profiles)
        self._client_cm = portal.wrap_async_context_manager(Client(server))
        self.client: Client = self._client_cm.__enter__()
        self.tools = [t.model_dump(by_alias=True) for t in portal.call(self._list)]

    async def _list(self) -> list[Any]:
        return list((await self.client.list_tools()).tools)

    async def _call(self, name: str, args: dict[str, Any]) -> Any:
        with anyio.fail_after(CALL_BOUND_S):
            return await self.client.call_tool(name, args)

    async def _ensure_board(self) -> None:
        if not any(c.port == "board" for c in self.manager.list()):
            await self.client.call_tool("open", {"port": "board"})

    def call(self, name: str, args: dict[str, Any]) -> Any:
        self.portal.call(self._ensure_board)
        return self.portal.call(self._call, name, args)

    def list_tools(self) -> list[Any]:
        return self.portal.call(self._list)

    def close(self) -> None:
        self._client_cm.__exit__(None, None, None)


@pytest.fixture(scope="module")
def harness() -> Iterator[Harness]:
    before = set(threading.enumerate())
    with tempfile.TemporaryDirectory() as tmp, anyio.from_thread.start_blocking_portal() as portal:
        h = Harness(portal, Path(tmp))
        try:
            yield h
        finally:
            h.close()
    assert not (leaked := describe(threads_left(before), [])), f"the fuzzed server leaked {leaked}"


def _tool_names() -> list[str]:
    async def names() -> list[str]:
        server = build_server(ConnectionManager(FakeOpener()))
        async with Client(server) as c:
            return [t.name for t in (await c.list_tools()).tools]

    return anyio.run(names)


TOOL_NAMES = _tool_names()


@pytest.mark.parametrize("tool_name", TOOL_NAMES)
def test_every_tool_survives_careless_arguments(harness: Harness, tool_name: str) -> None:
    tool = next(t for t in harness.tools if t["name"] == tool_name)
    n = 10 if tool_name in SLOW else 30

    @settings(
        max_examples=n,
        deadline=None,
        derandomize=True,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
        database=None,
    )
    @given(args=arguments(tool))
    def check(args: dict[str, Any]) -> None:
        r = harness.call(tool_name, args)
        if r.is_error:
            assert r.structured_content is not None, r.content
            err = r.structured_content["error"]
            assert CODE.match(err["code"]) and err["code"] != "internal_error", (tool_name, args, err)
            assert isinstance(err["message"], str) and len(err["message"]) <= 4000, err["code"]
        else:
            assert r.structured_content is not None, (tool_name, r.content)
        assert len(harness.list_tools()) == len(TOOL_NAMES)

    check()
