"""Resource-updated notifications: coalesced in time, and never piled up behind a stalled client."""

from __future__ import annotations

import asyncio

import pytest

from serial_mcp.mcp.notify import CountingBus, Notifier
from tests.mcp.notify_sync import Settled

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # Notifier is bound to an asyncio loop (pokes come from pump threads)


async def test_a_stalled_send_is_not_joined_by_more_and_one_follows_it() -> None:
    notifier = Notifier(CountingBus(), min_interval=0.01)
    release = asyncio.Event()
    sent: list[str] = []

    second = asyncio.Event()

    async def stalled_publish(uri: str) -> None:  # a client that stopped reading its stdout
        sent.append(uri)
        if len(sent) == 2:
            second.set()
        await release.wait()

    notifier.publish = stalled_publish  # type: ignore[method-assign]
    notifier.watched = lambda uri: True  # type: ignore[method-assign]
    notifier.bind(asyncio.get_running_loop())
    settled = Settled(notifier)
    for _ in range(20):  # pokes over ~20 intervals while the first send hangs
        notifier.poke("serial://connections")
        await asyncio.sleep(0.01)
    assert sent == ["serial://connections"] and len(notifier._tasks) == 1  # before: one task per interval
    release.set()
    await asyncio.wait_for(second.wait(), 5)  # the pokes during the stall became one notification
    await settled.wait("serial://connections")
    assert len(sent) == 2 and not notifier._tasks


async def test_pokes_within_an_interval_collapse_into_one_trailing_notification() -> None:
    notifier = Notifier(CountingBus(), min_interval=0.05)
    sent: list[str] = []
    second = asyncio.Event()

    async def publish(uri: str) -> None:
        sent.append(uri)
        if len(sent) == 2:
            second.set()

    notifier.publish = publish  # type: ignore[method-assign]
    notifier.watched = lambda uri: True  # type: ignore[method-assign]
    notifier.bind(asyncio.get_running_loop())
    settled = Settled(notifier)
    for _ in range(10):
        notifier.poke("serial://a")
    await asyncio.sleep(0.01)
    assert sent == ["serial://a"]  # the first at once
    await asyncio.wait_for(second.wait(), 5)  # the other nine: one, at the end of the interval
    await settled.wait("serial://a")  # and none after it
    assert sent == ["serial://a", "serial://a"]
