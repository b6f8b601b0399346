"""The engine-level test layer (issue 27): behaviour through ``serial_mcp.Engine``, no JSON-RPC.

A test here drives the same operations the MCP tools call, over an in-memory ``FakeOpener``
device, and asserts what the device saw and what the typed result says. The MCP tests
(tests/mcp) check the contract on the wire; these check what the operations do.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from serial_mcp.api import Engine, EngineConnection
from serial_mcp.core.port_info import PortInfo
from serial_mcp.serial.fake import FakeDevice, FakeOpener

PORT = "/dev/ttyFAKE0"
LISTED = PortInfo(
    name=PORT, description="fake USB serial", hwid="USB VID:PID=0403:6001 SER=A1", vid="0403",
    pid="6001", serial_number="A1", manufacturer="FTDI", product="FT232R", interface=None,
    location="1-1", transport="usb",
)  # fmt: skip


def at_modem(data: bytes) -> bytes | None:
    """``AT\\r`` → ``\\r\\nOK\\r\\n``; ``ATI\\r`` → an identity line then OK; anything else: silence."""
    if data == b"AT\r":
        return b"\r\nOK\r\n"
    if data == b"ATI\r":
        return b"\r\nFakeModem 1.0\r\nOK\r\n"
    return None


@dataclass
class Bench:
    engine: Engine
    opener: FakeOpener
    device: FakeDevice
    tmp: Path

    async def open(self, **options: object) -> EngineConnection:
        return await self.engine.open(PORT, **options)  # type: ignore[arg-type]


@pytest.fixture
async def bench(tmp_path: Path) -> AsyncIterator[Bench]:
    opener = FakeOpener()
    device = opener.add(PORT, at_modem)
    engine = Engine(
        opener=opener,
        capture_dir=tmp_path / "captures",
        profiles=tmp_path / "profiles.toml",
        port_lister=lambda: [LISTED],
    )
    async with engine:
        yield Bench(engine, opener, device, tmp_path)
