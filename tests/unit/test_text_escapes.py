"""Issue 37.8: text with a few non-UTF-8 bytes stays text, those bytes escaped (``\\xNN``, encoding
``utf8_escaped``), and reads back exactly; only data that is mostly not UTF-8 comes back as hex."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client

from serial_mcp.core.encoding import decode_input, encode_output
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from tests.tool_calls import call

BOOT = (Path(__file__).parent.parent / "data" / "bootlogs" / "esp32" / "esp32-mdf-boot.txt").read_bytes()


@pytest.mark.anyio
async def test_a_boot_log_with_one_glitched_byte_comes_back_as_text() -> None:
    """2,400 bytes of a real ESP32 boot with one 0xFF (line noise at reset): text, not 4,800 hex digits."""
    window = BOOT[:1200] + b"\xff" + BOOT[1200:2399]
    opener = FakeOpener()
    opener.add("dev").feed(window)
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
        r = await call(c, "read", {"connection_id": cid, "max_bytes": len(window), "timeout_ms": 5000})
    assert r["encoding"] == "utf8_escaped" and r["next_offset"] == len(window)
    assert "\\xff" in r["data"] and "POWERON_RESET" in r["data"]
    assert len(r["data"]) < len(window) + 64  # not twice its size
    assert decode_input(r["data"], "utf8_escaped") == window


def test_mostly_binary_data_stays_hex() -> None:
    ubx = bytes.fromhex("b5620107") + bytes(range(128, 220))
    assert encode_output(ubx, "utf8")[1] == "hex"


@given(st.binary(max_size=200), st.text(max_size=200))
def test_escaped_text_reads_back_exactly(noise: bytes, text: str) -> None:
    data = text.encode() + noise + b"\\x41\\\\"  # backslashes that look like escapes are escaped too
    shown, used = encode_output(data, "utf8")
    assert decode_input(shown, used) == data
