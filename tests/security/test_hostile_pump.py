"""Hostile devices against the pump and the writer (issue 28, items 4, 6 and 7).

* A standing responder whose answer the device does not take must not hold the RX pump: bytes that
  arrive after the match are delivered while the answer is still being written, an answer that
  cannot be written within its short bound is dropped with a ``respond failed`` event, and answers
  that pile up behind a stuck one are dropped (counted), never queued without end.
* A write to a device that stopped reading ends once no byte has been accepted for the stall time,
  reporting how many bytes went out, instead of waiting out the whole budget (100 s for 1 MB).
* A far end that accepts each connection, prints an error and closes (ser2net with its device gone)
  is not "back": the attempts stop at ``max_attempts`` whatever it printed.

Everything waits on events or counts; each wait has a hang guard, never a timing assertion.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import tty
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import pytest
from mcp import Client

from serial_mcp.core.eventlog import LogEvent
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.fake import FakeDevice, FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.responder import ANSWER_QUEUE
from serial_mcp.serial.system_open import SystemOpener
from tests.tool_calls import call, error

pytestmark = pytest.mark.anyio

GUARD_S = 30  # a hang fails the test instead of stalling the run (not a timing assertion)
PROMPT = b"U-Boot 2024.01\r\nHit any key to stop autoboot:  3 "
ANSWER = "A" * 8192  # the 8 KiB answer of the attack
FLOOD = "00" * 1_000_000  # 1 MB, hex: far more than a PTY buffers


class StuckWriter:
    """A device whose every write blocks until ``release``: ``writing`` is set while one is held."""

    def __init__(self, dev: FakeDevice) -> None:
        self.writing = threading.Event()
        self.released = threading.Event()
        self.calls = 0
        dev.responder = self._on_write  # FakePortHandle.write calls it inside the write

    def _on_write(self, data: bytes) -> bytes | None:
        self.calls += 1
        self.writing.set()
        self.released.wait(2 * GUARD_S)  # outlasts every guard: only release() ends it in time
        return None

    def release(self) -> None:
        self.released.set()


async def wait_event(event: threading.Event) -> None:
    with anyio.fail_after(GUARD_S):
        assert await anyio.to_thread.run_sync(event.wait, GUARD_S)


async def wait_ring(conn: Connection, want: bytes) -> None:
    """Until ``want`` is in the ring (woken by the pump's own wake-ups, bounded by the guard)."""
    with anyio.fail_after(GUARD_S):
        while True:
            snap = conn.snapshot()
            if want in conn.read_ring(snap.start_offset, None).data:
                return
            await conn.wait_change(1.0, snap.end_offset)


def respond_failures(conn: Connection, count: int = 1) -> tuple[threading.Event, list[LogEvent]]:
    """An event set once ``count`` ``respond failed`` entries reached ``conn``'s log, and the list
    of them (the listener sees every event as it is logged)."""
    seen: list[LogEvent] = []
    hit = threading.Event()

    def listener(event: LogEvent, data: bytes | None) -> None:
        if event.type == "error" and event.fields.get("respond") is True:
            seen.append(event)
            if len(seen) >= count:
                hit.set()

    conn.add_listener(listener)
    return hit, seen


@pytest.fixture
async def fake() -> AsyncIterator[tuple[Client, FakeDevice, ConnectionManager]]:
    opener = FakeOpener()
    dev = opener.add("dev")
    manager = ConnectionManager(opener)
    async with Client(build_server(manager)) as c:
        yield c, dev, manager
    await manager.close_all()


@pytest.fixture
def far_end() -> Iterator[tuple[int, str]]:
    """A PTY whose far end (the "device") only reads when the test says: (master fd, slave path)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("needs Linux PTYs")
    master, slave = os.openpty()
    tty.setraw(master)
    tty.setraw(slave)
    path = os.ttyname(slave)
    os.close(slave)
    yield master, path
    os.close(master)


@pytest.fixture
async def system() -> AsyncIterator[tuple[Client, ConnectionManager]]:
    manager = ConnectionManager(SystemOpener())
    async with Client(build_server(manager)) as c:
        yield c, manager
    await manager.close_all()


# --- item 4: a responder never holds the pump ------------------------------------------------------


async def test_rx_is_delivered_while_a_responders_answer_is_blocked(
    fake: tuple[Client, FakeDevice, ConnectionManager],
) -> None:
    c, dev, manager = fake
    stuck = StuckWriter(dev)
    rule = {"on": "Hit any key", "send": ANSWER}
    cid = (await call(c, "open", {"port": "dev", "respond": [rule]}))["connection_id"]
    conn = manager.get(cid)
    dev.feed(PROMPT)
    await wait_event(stuck.writing)  # the answer is in the device's write, which holds it
    dev.feed(b"\r\n=> after the match\r\n")
    await wait_ring(conn, b"after the match")  # the pump read on: before the fix it sat in that write
    assert stuck.writing.is_set() and not stuck.released.is_set()  # ... and the write is still held
    r = await call(c, "read", {"connection_id": cid, "match": "after the match", "timeout_ms": 5000})
    assert r["matched"]
    stuck.release()
    with anyio.fail_after(GUARD_S):
        while bytes(dev.written) != ANSWER.encode():
            await anyio.sleep(0.01)
    assert stuck.calls == 1


async def test_answers_piling_up_behind_a_stuck_one_are_dropped_and_counted(
    fake: tuple[Client, FakeDevice, ConnectionManager],
) -> None:
    """A device that asks for the cursor 500 times and never takes an answer: the queue of answers is
    bounded; the rest are dropped, each logged as ``respond failed`` and counted in get_status."""
    c, dev, manager = fake
    stuck = StuckWriter(dev)
    cid = (await call(c, "open", {"port": "dev", "respond": ["terminal"]}))["connection_id"]
    conn = manager.get(cid)
    dropped = 500 - ANSWER_QUEUE  # one answer in the stuck write, ANSWER_QUEUE waiting behind it
    hit, failures = respond_failures(conn, dropped)
    dev.feed(b"\x1b[6n")
    await wait_event(stuck.writing)
    dev.feed(b"\x1b[6n" * 500 + b"end of queries")
    await wait_ring(conn, b"end of queries")
    await wait_event(hit)
    status = await call(c, "get_status", {"connection_id": cid})
    (rule,) = status["responders"]
    assert rule["sent"] == 501 and rule["failed"] == dropped == len(failures)
    assert all("queue" in str(e.fields.get("reason")) for e in failures)
    log = await call(c, "get_log", {"connection_id": cid, "limit": 1000})
    assert any("respond failed" in str(e.get("message", "")) for e in log["events"])
    stuck.release()


@pytest.mark.slow  # over a second: the full suite runs it, the fast lane does not
async def test_an_answer_the_device_does_not_take_is_dropped_with_a_respond_failed_event(
    far_end: tuple[int, str], system: tuple[Client, ConnectionManager]
) -> None:
    """A real PTY whose far end stopped reading: the 8 KiB answer cannot go out. The pump reads on
    (the bytes after the prompt are delivered well inside the old 10 s block), and the answer is
    dropped at its short bound with a ``respond failed`` event and a count in get_status."""
    master, path = far_end
    c, manager = system
    rule = {"on": "Hit any key", "send": ANSWER}
    cid = (await call(c, "open", {"port": path, "respond": [rule]}))["connection_id"]
    conn = manager.get(cid)
    hit, failures = respond_failures(conn)
    full = await call(c, "write", {"connection_id": cid, "data": FLOOD, "encoding": "hex", "timeout_ms": 300})
    assert full["stop_reason"] == "timeout"  # the PTY is full: nothing more goes out
    os.write(master, PROMPT)
    r = await call(c, "read", {"connection_id": cid, "match": "Hit any key", "timeout_ms": 5000})
    assert r["matched"]  # the prompt is in the ring: the pump matched it and went on to answer it
    os.write(master, b"\r\nafter the prompt\r\n")  # before the fix, the pump read this 10 s later
    r = await call(c, "read", {"connection_id": cid, "match": "after the prompt", "timeout_ms": 5000})
    assert r["matched"]
    await wait_event(hit)
    (failed,) = failures
    assert failed.fields["reason"] and failed.fields["bytes"] == len(ANSWER)
    assert "respond failed" in failed.fields["message"]
    status = await call(c, "get_status", {"connection_id": cid})
    assert status["responders"][0] == {**status["responders"][0], "sent": 1, "failed": 1}
    assert status["state"] == "open"  # a device that does not take an answer is not a lost port


# --- item 6: a write ends when the device stops taking bytes ---------------------------------------


class SlowReader:
    """Reads the PTY's far end in small bites until it has ``want`` bytes (a device that is slow, not
    stuck), then reads no more; ``done`` is set then."""

    def __init__(self, master: int, want: int) -> None:
        self.master = master
        self.want = want
        self.got = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while self.got < self.want and not self.done.wait(0.01):  # a slow device: 1 KiB per 10 ms
            try:
                self.got += len(os.read(self.master, min(1024, self.want - self.got)))
            except BlockingIOError:
                continue
            except OSError:
                break
        self.done.set()

    def __enter__(self) -> SlowReader:
        os.set_blocking(self.master, False)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join(GUARD_S)


@pytest.mark.slow  # over a second: the full suite runs it, the fast lane does not
async def test_a_write_to_a_device_that_stopped_reading_ends_at_the_stall_time(
    far_end: tuple[int, str], system: tuple[Client, ConnectionManager]
) -> None:
    """1 MB with the default budget (10 s plus its wire time: ~100 s) ends once the device took no
    byte for the stall time, with the count that went out and ``stop_reason: stalled``."""
    _, path = far_end
    c, _ = system
    cid = (await call(c, "open", {"port": path}))["connection_id"]
    with anyio.fail_after(GUARD_S):  # the default stall (3 s) ends it; before, only the 100 s budget
        r = await call(c, "write", {"connection_id": cid, "data": FLOOD, "encoding": "hex"})
    assert r["stop_reason"] == "stalled"
    assert 0 < r["bytes_written"] < 1_000_000 and r["tx_bytes"] == r["bytes_written"]
    with anyio.fail_after(GUARD_S):
        err = await error(c, "transact", {"connection_id": cid, "data": FLOOD, "encoding": "hex"})
    assert err["code"] == "write_timeout" and "took no byte" in err["message"]


@pytest.mark.slow  # over a second: the full suite runs it, the fast lane does not
async def test_a_slow_device_is_not_a_stalled_one(
    far_end: tuple[int, str], system: tuple[Client, ConnectionManager]
) -> None:
    """``stall_ms`` bounds the silence between accepted bytes, not the write: a device that keeps
    taking bytes slowly gets them all; once it stops, the write ends at its stall time."""
    master, path = far_end
    c, _ = system
    cid = (await call(c, "open", {"port": path}))["connection_id"]
    size = 200_000  # far more than a PTY buffers, so the write waits on the device throughout
    args = {"connection_id": cid, "data": "00" * size, "encoding": "hex", "timeout_ms": 600_000}
    with SlowReader(master, size) as device, anyio.fail_after(GUARD_S * 2):
        r = await call(c, "write", {**args, "stall_ms": 2000})
        assert r["stop_reason"] == "complete" and r["bytes_written"] == size
        await anyio.to_thread.run_sync(device.done.wait, GUARD_S)
    assert device.got == size  # every byte reached the device
    with anyio.fail_after(GUARD_S):  # nobody reads any more
        r = await call(
            c, "write", {"connection_id": cid, "data": FLOOD, "encoding": "hex", "stall_ms": 200, "timeout_ms": 600_000}
        )
    assert r["stop_reason"] == "stalled" and 0 <= r["bytes_written"] < 1_000_000
    bad = await error(c, "write", {"connection_id": cid, "data": "x", "stall_ms": 0})
    assert bad["code"] == "invalid_argument" and "stall" in bad["message"]


# --- item 7: a far end that accepts, complains and closes ------------------------------------------


class ComplainingServer:
    """127.0.0.1: accepts each connection, sends ``Device open failure`` and closes (ser2net whose
    device is gone)."""

    def __init__(self) -> None:
        self.accepted = 0
        self.server: asyncio.Server | None = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        writer.write(b"Device open failure\r\n")
        await writer.drain()
        writer.close()

    async def __aenter__(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port: int = self.server.sockets[0].getsockname()[1]
        return port

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()


@pytest.mark.slow  # over a second: the full suite runs it, the fast lane does not
async def test_reconnect_attempts_stop_at_max_attempts_against_a_far_end_that_prints_and_closes() -> None:
    far = ComplainingServer()
    manager = ConnectionManager(SystemOpener())
    policy: dict[str, Any] = {"max_attempts": 5, "initial_delay_ms": 5, "max_delay_ms": 20}
    try:
        async with far as port, Client(build_server(manager)) as c:
            opened = await call(c, "open", {"port": f"socket://127.0.0.1:{port}", "reconnect": policy})
            cid = opened["connection_id"]
            with anyio.fail_after(GUARD_S):  # before the fix it reconnected for ever: only the guard ended it
                r = await call(c, "read", {"connection_id": cid, "match": "never", "timeout_ms": 600_000})
            assert r["stop_reason"] == "disconnected"
            status = await call(c, "get_status", {"connection_id": cid})
            assert status["state"] == "disconnected"
            assert status["reconnect_attempts"] == 5
            assert far.accepted == 1 + 5  # the open, then max_attempts reconnects: no more
            assert "gave up" in status["last_error"]
    finally:
        await manager.close_all()
