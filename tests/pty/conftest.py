"""PTY fixtures: a simulated device on a real PTY, opened through the production SystemOpener."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator

import pytest

from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.system_open import SystemOpener
from tests.pty.devices import PtyDevice

if not sys.platform.startswith("linux"):
    pytest.skip("PTY tests need Linux PTYs", allow_module_level=True)


@pytest.fixture
def pty_factory() -> Iterator[list[PtyDevice]]:
    made: list[PtyDevice] = []
    yield made
    for dev in made:
        dev.close()


@pytest.fixture
async def manager() -> AsyncIterator[ConnectionManager]:
    mgr = ConnectionManager(SystemOpener())
    yield mgr
    await mgr.close_all()
