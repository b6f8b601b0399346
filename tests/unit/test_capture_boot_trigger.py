"""capture_boot for boards without a line reset (send bytes after the mark) and saying what it did
not capture (bytes that arrived before the mark)."""

from __future__ import annotations

import pytest
from mcp import Client

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from tests.tool_calls import call

pytestmark = pytest.mark.anyio


async def test_send_triggers_the_boot_and_earlier_bytes_are_counted() -> None:
    opener = FakeOpener()
    dev = opener.add("dev", lambda d: b"U-Boot 2024.01\r\nboot done\r\n=> " if d == b"reset\r" else None)
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
        dev.feed(b"old noise\r\n")
        await call(c, "read", {"connection_id": cid, "from": "buffer_start", "match": "\n", "timeout_ms": 3000})
        r = await call(c, "capture_boot", {"connection_id": cid, "send": "reset\r", "match": "=> ", "timeout_ms": 5000})
        assert r["read"]["matched"] and r["read"]["data"].startswith("U-Boot")
        assert r["bytes_before_mark"] == len(b"old noise\r\n")  # read with from= does not consume
        assert bytes(dev.written) == b"reset\r"
        content = (await c.call_tool("capture_boot", {"connection_id": cid, "send": "reset\r", "match": "=> "})).content
        assert "buffer_start" in content[0].text  # type: ignore[union-attr]
