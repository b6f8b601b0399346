"""RxPump lingering: after a small chunk nobody waits for, the pump lets the handle wait before the
next read; a poke (a reader starts waiting), stop, or a large chunk means no linger."""

from __future__ import annotations

import queue
import threading

import pytest

from serial_mcp.serial.pump import LINGER_BUDGET, LINGER_S, TRICKLE_WINDOW_S, RxPump, Trickle


class LingerHandle:
    """Chunks come from a queue; ``linger`` blocks until ``interrupt`` (no timeout: the test decides)."""

    name = "fake"

    def __init__(self) -> None:
        self.chunks: queue.SimpleQueue[bytes] = queue.SimpleQueue()
        self.lingers: list[float] = []
        self.in_linger = threading.Event()
        self._wake = threading.Event()

    def read_chunk(self) -> bytes:
        self._wake.clear()
        try:
            return self.chunks.get(timeout=0.05)
        except queue.Empty:
            return b""

    def linger(self, seconds: float) -> None:
        self.lingers.append(seconds)
        self.in_linger.set()
        self._wake.wait()
        self.in_linger.clear()

    def interrupt(self) -> None:
        self._wake.set()


def _pump(handle: LingerHandle, may: bool) -> tuple[RxPump, queue.SimpleQueue[bytes]]:
    got: queue.SimpleQueue[bytes] = queue.SimpleQueue()
    pump = RxPump(handle, lambda d, t: got.put(d), lambda e: None, may_linger=lambda: may)  # type: ignore[arg-type]
    pump.start()
    return pump, got


def test_small_chunk_lingers_until_poked() -> None:
    h = LingerHandle()
    pump, got = _pump(h, may=True)
    h.chunks.put(b"abc")
    assert got.get(timeout=5) == b"abc"
    assert h.in_linger.wait(5)
    assert pump.lingering
    h.chunks.put(b"def")
    pump.poke()  # a reader starts waiting: the linger ends, the next read happens
    assert got.get(timeout=5) == b"def"
    assert h.lingers[0] == LINGER_S
    pump.stop()


def test_no_linger_when_someone_needs_the_bytes() -> None:
    h = LingerHandle()
    pump, got = _pump(h, may=False)
    for chunk in (b"a", b"b", b"c"):
        h.chunks.put(chunk)
        assert got.get(timeout=5) == chunk
    pump.stop()
    assert h.lingers == []


def test_no_linger_after_a_large_chunk() -> None:
    h = LingerHandle()
    pump, got = _pump(h, may=True)
    big = b"x" * LINGER_BUDGET
    h.chunks.put(big)
    assert got.get(timeout=5) == big
    pump.stop()
    assert h.lingers == []


def test_trickle_is_the_recent_rate() -> None:
    w = TRICKLE_WINDOW_S
    tr = Trickle()
    assert tr.note(115, 0.0)  # first chunk after quiet
    assert tr.note(115, 0.01)
    assert not tr.note(LINGER_BUDGET, 0.02)  # a flood starts: read back to back
    assert not tr.note(100, 1.5 * w)  # the previous window still counts
    assert tr.note(100, 3.6 * w)  # quiet for a whole window: a trickle again
    fast = Trickle()
    t = 0.0
    for _ in range(100):  # 4 KiB every 5 ms (~800 KB/s): never a trickle after the first window
        t += 0.005
        trickling = fast.note(4096, t)
    assert not trickling


def test_poke_is_free_when_not_lingering() -> None:
    h = LingerHandle()
    pump = RxPump(h, lambda d, t: None, lambda e: None, may_linger=lambda: True)  # type: ignore[arg-type]
    calls: list[int] = []
    h.interrupt = lambda: calls.append(1)  # type: ignore[method-assign]
    pump.poke()
    assert calls == []


def test_read_after_a_quiet_linger_waits_instead_of_eof() -> None:
    """A PTY read with no data returns b"" (VMIN 0): after a linger that is "nothing yet", not EOF."""
    import os
    import tty

    from serial_mcp.core.settings import SerialSettings
    from serial_mcp.serial.system_open import SystemOpener

    m, s = os.openpty()
    tty.setraw(m)
    handle = SystemOpener().open(os.ttyname(s), SerialSettings())
    try:
        os.write(m, b"a")
        assert handle.read_chunk() == b"a"
        handle.linger(0.001)  # nothing arrives meanwhile
        timer = threading.Timer(0.1, os.write, (m, b"z"))
        timer.start()
        assert handle.read_chunk() == b"z"
        timer.join()
    finally:
        handle.close()
        os.close(m)
        os.close(s)


@pytest.mark.anyio
async def test_connection_lingers_only_when_nobody_needs_the_bytes() -> None:
    """No linger while a read waits, right after a chunk a read waited for, while a responder is
    armed, or while a recording/mirror listens."""
    import asyncio
    import os
    import tty

    from serial_mcp.serial.manager import ConnectionManager
    from serial_mcp.serial.system_open import SystemOpener

    m, s = os.openpty()
    tty.setraw(m)
    mgr = ConnectionManager(SystemOpener())
    conn = await mgr.open(os.ttyname(s))
    may = conn._pump._may_linger
    try:
        assert may()
        conn.listeners.append(lambda event, data: None)  # e.g. resource notifications: still lingers
        assert may()
        conn.recorder = object()
        assert not may()
        conn.recorder = None
        conn._mirror = object()
        assert not may()
        conn._mirror = None
        conn.listeners.clear()
        conn.responders.append(object())
        assert not may()
        conn.responders.clear()
        waiter = asyncio.ensure_future(conn.wait_change(5.0, conn.ring.end_offset))
        await asyncio.sleep(0)
        assert not may()
        os.write(m, b"x")
        await waiter
        # a reply a read waited for: the next command's read must not find the pump lingering
        assert not may()
        arrived = asyncio.Event()
        loop = asyncio.get_running_loop()

        def heard(event: object, data: bytes | None) -> None:
            loop.call_soon_threadsafe(arrived.set)

        conn.listeners.append(heard)
        os.write(m, b"y")  # a chunk nobody waits for: a stream again
        await asyncio.wait_for(arrived.wait(), 5)
        assert may()
    finally:
        await mgr.close_all()
        os.close(m)
        os.close(s)


def test_the_linger_is_what_linger_bytes_take_at_the_recent_rate() -> None:
    from serial_mcp.serial.pump import LINGER_BYTES

    tr = Trickle()
    assert tr.note(115, 0.0) == LINGER_S  # after quiet: the longest
    assert tr.note(115, 0.01) == LINGER_S  # 11.5 KB/s: LINGER_BYTES take longer than LINGER_S
    wait = tr.note(1500, 0.06)  # 30 KB/s: the next read comes before LINGER_BYTES wait in the kernel
    assert 0 < wait < LINGER_S and wait * 1500 / 0.05 == pytest.approx(LINGER_BYTES)
