"""Consoles colour their prompts and ask for the cursor: match on the text without ANSI codes, and a
standing "terminal" rule answers ESC[6n so shells that ask get an answer."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from serial_mcp.core.match import Matcher
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from tests.tool_calls import call

pytestmark = pytest.mark.anyio

COLOURED = b"\x1b[1;32mroot@box\x1b[0m:\x1b[1;34m~\x1b[0m# \x1b[6n"


def test_ansi_blind_matcher_reports_raw_positions() -> None:
    m = Matcher.from_spec({"pattern": "root@box:~# ", "ansi": "ignore"})
    span = m.find(b"noise\r\n" + COLOURED)
    assert span is not None
    raw = (b"noise\r\n" + COLOURED)[span.start : span.end]
    assert raw.startswith(b"\x1b[1;32mroot") or raw.startswith(b"root")
    assert raw.endswith(b"# ")
    assert Matcher.from_spec({"pattern": "root@box:~# "}).find(COLOURED) is None  # keep: codes hide it


async def test_read_matches_a_coloured_prompt_and_terminal_queries_are_answered() -> None:
    opener = FakeOpener()
    dev = opener.add("dev")
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "dev", "respond": ["terminal"]}))["connection_id"]
        dev.feed(COLOURED)
        r = await call(c, "read", {"connection_id": cid, "match": {"pattern": "root@box:~# ", "ansi": "ignore"}, "timeout_ms": 3000})
        assert r["matched"]
        with anyio.fail_after(5):
            while bytes(dev.written) != b"\x1b[24;80R":
                await anyio.sleep(0.01)
        dev.feed(b"\x1b[6n")
        with anyio.fail_after(5):
            while bytes(dev.written) != b"\x1b[24;80R" * 2:
                await anyio.sleep(0.01)
