"""Catastrophic user patterns cannot stall the server: matching runs on RE2 (linear time).

Each attack goes through the real ``read`` tool in-process while another call must still be
answered; the bounds are generous (the old ``re`` engine needed seconds to minutes here).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcp import Client

from serial_mcp.core.match import MAX_PATTERN_BYTES, REGEX_LOOKBACK, Matcher
from serial_mcp.core.parsers.config import build_parser
from serial_mcp.errors import InvalidArgument
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.reader import find_in_window
from serial_mcp.serial.responder import Responder
from tests.tool_calls import call, error

pytestmark = pytest.mark.anyio

BOUND_S = 30  # generous: RE2 needs milliseconds; Python's re needed 3.5 s (26 bytes) to 120 s (glob)


@pytest.fixture
async def device() -> AsyncIterator[tuple[Client, FakeOpener, str]]:
    opener = FakeOpener()
    opener.add("fake0")
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "fake0"}))["connection_id"]
        yield c, opener, cid


async def _read_while_serving(c: Client, args: dict[str, Any], other_first: bool = True) -> dict[str, Any]:
    """Run ``read`` and, concurrently, a ``list_connections`` (answered first unless the read matches)."""
    order: list[str] = []
    result: dict[str, Any] = {}

    async def reader() -> None:
        result.update(await call(c, "read", args))
        order.append("read")

    async def other() -> None:
        await call(c, "list_connections", {})
        order.append("other")

    with anyio.fail_after(BOUND_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            await anyio.sleep(0)  # let the read start first
            tg.start_soon(other)
    if other_first:
        assert order == ["other", "read"], "the other call waited for the read"
    return result


@pytest.mark.parametrize(
    ("match", "stream"),
    [
        ({"pattern": "(a+)+$", "mode": "regex"}, b"a" * 30 + b"!"),
        ({"pattern": "*a*a*a*a*a*a*b", "mode": "glob"}, b"a" * 3000),
        ({"pattern": "(x+x+)+y", "mode": "regex"}, b"x" * 5000),
    ],
)
@pytest.mark.slow
async def test_catastrophic_pattern_returns_and_server_keeps_serving(
    device: tuple[Client, FakeOpener, str], match: dict[str, str], stream: bytes
) -> None:
    c, opener, cid = device
    opener.devices["fake0"].feed(stream)
    r = await _read_while_serving(c, {"connection_id": cid, "match": match, "timeout_ms": 500})
    assert r["stop_reason"] == "timeout"  # no match, and the read ended on its own timeout


@pytest.mark.slow
async def test_match_found_after_a_catastrophic_prefix(device: tuple[Client, FakeOpener, str]) -> None:
    c, opener, cid = device
    opener.devices["fake0"].feed(b"a" * 3000 + b"b\r\n")
    r = await _read_while_serving(
        c,
        {"connection_id": cid, "match": {"pattern": "*a*a*a*b", "mode": "glob"}, "timeout_ms": 5000},
        other_first=False,
    )
    assert r["stop_reason"] == "match" and r["data"].endswith("ab")


@pytest.mark.slow
async def test_catastrophic_custom_prompt_regex(device: tuple[Client, FakeOpener, str]) -> None:
    c, opener, cid = device
    opener.devices["fake0"].feed(b"a" * 30 + b"!\n" + b"$ ok\n")
    r = await _read_while_serving(
        c,
        {
            "connection_id": cid,
            "rx_framing": {"type": "line"},
            "rx_parser": {"type": "shell_prompt", "prompt": "^(a+)+$|^[$] "},
            "timeout_ms": 5000,
        },
        other_first=False,
    )
    assert [f["parsed"]["kind"] for f in r["frames"]] == ["output", "prompt"]


@pytest.mark.parametrize(
    ("pattern", "says"),
    [
        (r"(a)\1", "backreferences"),
        ("a(?=b)", "lookahead"),
        ("(?<!x)a", "lookbehind"),
        ("(?>a+)b", "atomic groups"),
        ("x" * (MAX_PATTERN_BYTES + 1), f"at most {MAX_PATTERN_BYTES} bytes"),
        ("(?:a{999}|b{999})", "too complex"),
        (r"(\w+\s*){1000}", "too complex"),
    ],
)
@pytest.mark.slow
async def test_unsupported_or_oversized_pattern_is_a_clear_error(
    device: tuple[Client, FakeOpener, str], pattern: str, says: str
) -> None:
    c, _, cid = device
    err = await error(c, "read", {"connection_id": cid, "match": {"pattern": pattern, "mode": "regex"}})
    assert err["code"] == "invalid_argument"
    assert says in err["message"]


@pytest.mark.slow
async def test_unsupported_prompt_regex_is_a_clear_error(device: tuple[Client, FakeOpener, str]) -> None:
    c, _, cid = device
    args = {"connection_id": cid, "rx_parser": {"type": "shell_prompt", "prompt": r"(\$) \1"}}
    err = await error(c, "read", args)
    assert err["code"] == "invalid_argument" and "backreferences" in err["message"]


def test_respond_on_uses_the_safe_engine() -> None:
    r = Responder.from_spec({"on": {"pattern": "(a+)+$", "mode": "regex"}, "send": "x"})
    assert not r.feed(b"a" * 40 + b"!", 0)  # returns at once: RE2, no backtracking
    with pytest.raises(InvalidArgument):
        Responder.from_spec({"on": {"pattern": r"(a)\1", "mode": "regex"}, "send": "x"})


def test_prompt_parser_uses_the_safe_engine() -> None:
    parser = build_parser({"type": "shell_prompt", "prompt": "(a+)+$"})
    assert parser.parse(b"a" * 40 + b"!").fields["kind"] == "output"


def test_regex_search_resumes_near_the_new_bytes() -> None:
    """An unbounded pattern rescans at most REGEX_LOOKBACK old bytes; a bounded one its own length."""
    unbounded = Matcher(b"x+y", "regex")
    assert unbounded.resume_at(10 * REGEX_LOOKBACK) == 9 * REGEX_LOOKBACK + 1
    bounded = Matcher(b"OK\\r\\n|ERR[0-9]", "regex")
    assert bounded.resume_at(1000) == 1000 - len(b"OK\\r\\n|ERR[0-9]") + 1
    glob = Matcher(b"login?", "glob")
    assert glob.resume_at(1000) == 1000 - 5
    # a match torn across the resume point is still found
    window = b"." * 5000 + b"ERR7"
    assert bounded.find(window, 5002) is not None


async def test_large_search_runs_off_the_event_loop_and_respects_the_deadline() -> None:
    """A DFA-defeating pattern over a big window runs in a worker thread, piece by piece."""
    m = Matcher(b"[ab]*a[ab]{200}c", "regex")
    window = b"ab" * (2 * 1024 * 1024)
    ticks = 0
    done = anyio.Event()

    async def tick() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await anyio.sleep(0)

    with anyio.fail_after(BOUND_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(tick)
            span, reached = await find_in_window(m, window, 0, anyio.current_time() - 1)
            done.set()
    assert span is None
    assert 0 < reached < len(window)  # the deadline had passed: it stopped after the first piece
    assert ticks > 0  # the loop ran while the thread searched
