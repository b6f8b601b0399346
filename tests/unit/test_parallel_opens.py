"""Opens run in parallel (identify opens up to 16 ports at once), yet one port is never opened twice
and the connection limit counts the opens under way."""

from __future__ import annotations

import threading

import anyio
import pytest

from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import SerialMcpError
from serial_mcp.serial.fake import FakeOpener, FakePortHandle
from serial_mcp.serial.manager import ConnectionManager

pytestmark = pytest.mark.anyio


def slow_opener(started: threading.Event, release: threading.Event) -> FakeOpener:
    opener = FakeOpener()
    real = opener.open

    def open_slowly(port: str, settings: SerialSettings) -> FakePortHandle:
        started.set()
        assert release.wait(10)
        return real(port, settings)

    opener.open = open_slowly  # type: ignore[method-assign]
    return opener


async def test_a_port_being_opened_is_busy_to_a_second_open_and_counts_toward_the_limit() -> None:
    started, release = threading.Event(), threading.Event()
    opener = slow_opener(started, release)
    opener.add("a"), opener.add("b")
    manager = ConnectionManager(opener, max_connections=1)
    errors: list[str] = []

    async def second(port: str) -> None:
        try:
            await manager.open(port)
        except SerialMcpError as exc:
            errors.append(exc.code.value)

    async with anyio.create_task_group() as tg:
        tg.start_soon(manager.open, "a")
        await anyio.to_thread.run_sync(started.wait, 10)
        await second("a")  # the same port, while its open is under way
        await second("b")  # another port, past the limit that counts the open under way
        release.set()
    assert errors == ["port_busy", "too_many_connections"]
    assert [c.port for c in manager.list()] == ["a"]
    await manager.close_all()
