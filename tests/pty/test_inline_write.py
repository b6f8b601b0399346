"""A command of a few bytes to a PTY or a socket is written on the event loop (no worker thread, no
drain owed); what the descriptor does not take at once goes the bounded way, in order, counted."""

from __future__ import annotations

import os
import threading
import tty
from typing import Any

import anyio
import pytest

from serial_mcp.serial.manager import ConnectionManager
from tests.pty.devices import PtyDevice, echo

pytestmark = pytest.mark.anyio


class WorkerCount:
    """Counts the writes that went to a worker thread (``anyio.to_thread.run_sync`` in tx.py)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = anyio.to_thread.run_sync

        async def counted(fn: Any, *args: Any, **kw: Any) -> Any:
            self.calls += 1
            return await real(fn, *args, **kw)

        monkeypatch.setattr(anyio.to_thread, "run_sync", counted)


async def test_a_short_command_to_a_pty_costs_no_thread_hop(
    manager: ConnectionManager, pty_factory: list[PtyDevice], monkeypatch: pytest.MonkeyPatch
) -> None:
    dev = PtyDevice(echo).start()
    pty_factory.append(dev)
    conn = await manager.open(dev.path)
    workers = WorkerCount(monkeypatch)
    for i in range(20):
        out = await conn.tx.write(f"AT+N={i}\r".encode())
        assert out.bytes_written == len(f"AT+N={i}\r") and not out.timed_out
    assert workers.calls == 0
    with anyio.fail_after(30):
        while len(dev.received) < sum(len(f"AT+N={i}\r") for i in range(20)):
            await conn.wait_change(0.5, conn.snapshot().end_offset)
    assert bytes(dev.received) == b"".join(f"AT+N={i}\r".encode() for i in range(20))
    assert conn.tx.tx_bytes == len(dev.received)


async def test_what_the_pty_does_not_take_at_once_follows_in_a_worker_in_order(
    manager: ConnectionManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """4 MiB (far more than a PTY buffers): the first part goes out on the loop, the rest in a worker
    while the far end drains slowly; every byte arrives once, in order, and is counted once."""
    master, slave = os.openpty()
    tty.setraw(master)
    tty.setraw(slave)
    path = os.ttyname(slave)
    payload = bytes(range(256)) * (4 << 12)
    got = bytearray()
    done = threading.Event()

    def drain() -> None:
        while len(got) < len(payload):
            got.extend(os.read(master, 65536))
        done.set()

    conn = await manager.open(path)
    workers = WorkerCount(monkeypatch)
    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        with anyio.fail_after(60):  # a hang guard
            out = await conn.tx.write(payload, timeout_s=60)
            await anyio.to_thread.run_sync(done.wait, 60)
        assert out.bytes_written == len(payload) and not out.timed_out
        assert bytes(got) == payload
        assert conn.tx.tx_bytes == len(payload)
        assert workers.calls >= 1  # the rest went the bounded way
    finally:
        await conn.close()
        os.close(master)
        os.close(slave)


async def test_a_handle_without_a_nonblocking_write_still_uses_the_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from serial_mcp.serial.fake import FakeOpener

    opener = FakeOpener()
    opener.add("fake0")
    manager = ConnectionManager(opener)
    conn = await manager.open("fake0")
    workers = WorkerCount(monkeypatch)
    out = await conn.tx.write(b"AT\r")
    assert out.bytes_written == 3 and workers.calls == 1
    await manager.close_all()
