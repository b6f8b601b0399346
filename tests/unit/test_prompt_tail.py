"""A console prompt is the unterminated tail: a read with the shell_prompt parser ends on it once
the console is quiet, ANSI queries after it (busybox's ESC[6n) notwithstanding — not on idle."""

from __future__ import annotations

import pytest
from mcp import Client

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from tests.tool_calls import call

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.mark.parametrize("prompt", [b"root@box:~# \x1b[6n", b"=> ", b">>> ", b"\x1b[1;32muser@host\x1b[0m:~$ "])
async def test_read_ends_on_an_unterminated_prompt(prompt: bytes) -> None:
    opener = FakeOpener()
    dev = opener.add("dev")
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
        dev.feed(b"uname -a\r\nLinux box 6.1\r\n" + prompt)
        r = await call(c, "read", {"connection_id": cid, "rx_parser": {"type": "shell_prompt"}, "timeout_ms": 5000, "max_frames": 10})
        assert r["stop_reason"] == "final", r
        last = r["frames"][-1]
        assert last["parsed"]["kind"] == "prompt"


async def test_an_ordinary_unterminated_tail_is_not_a_prompt() -> None:
    opener = FakeOpener()
    dev = opener.add("dev")
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
        dev.feed(b"Loading kernel from 0x4000")
        r = await call(c, "read", {"connection_id": cid, "rx_parser": {"type": "shell_prompt"}, "timeout_ms": 400})
        assert r["stop_reason"] == "timeout" and r["frames"] == []
