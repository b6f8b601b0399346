"""A free lock is taken without a cancel scope; a lock with a queue, even just released, is waited
for with the caller's deadline (so a write behind a stuck one still times out)."""

from __future__ import annotations

import asyncio

import pytest

from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.tx import TxBusy, TxSession, lock_is_free

pytestmark = pytest.mark.anyio


async def test_free_means_acquire_returns_at_once() -> None:
    lock = asyncio.Lock()
    assert lock_is_free(lock)
    await lock.acquire()
    assert not lock_is_free(lock)
    queued = asyncio.ensure_future(lock.acquire())
    await asyncio.sleep(0)
    lock.release()
    assert not lock_is_free(lock)  # released, but its next waiter has not run: not free
    await queued
    lock.release()
    assert lock_is_free(lock)


async def test_a_turn_behind_a_held_lock_keeps_its_deadline() -> None:
    opener = FakeOpener()
    opener.add("p")
    from serial_mcp.core.settings import SerialSettings

    tx = TxSession(opener.open("p", SerialSettings()))
    async with tx.turn(1.0):  # free: taken at once
        with pytest.raises(TxBusy):  # held: times out instead of waiting for ever
            async with tx.turn(0.05):
                pass
        with pytest.raises(LookupError):  # a caller's own error for a busy turn
            async with tx.turn(0.05, busy=lambda: LookupError("busy")):
                pass
    async with tx.turn(0.05):  # given back on exit
        pass
