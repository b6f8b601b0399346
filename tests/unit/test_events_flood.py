"""Issue 24, must hold: the event detector never blocks the pump. A flood from the in-memory device (as fast
as it can feed, tens to hundreds of MB/s here) of text that matches no signature, and of text where every
line is a crash head, keeps every byte accounted for: what the reader got plus what it was told it lost is
what was sent, the ring received all of it, and the detector scanned or counted as not scanned every byte.
"""

from __future__ import annotations

import threading

import anyio
import pytest

from serial_mcp import Engine
from serial_mcp.serial.fake import FakeOpener

pytestmark = pytest.mark.anyio

NOISE = b"$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47\r\n"
CRASH = b"Guru Meditation Error: Core  0 panic'ed (LoadProhibited). Exception was unhandled.\r\n"
TOTAL = 24 << 20


def _feeder(device: object, line: bytes, total: int) -> threading.Thread:
    block = line * (65536 // len(line))

    def run() -> None:
        sent = 0
        while sent < total:
            piece = block[: total - sent]
            device.feed(piece)  # type: ignore[attr-defined]
            sent += len(piece)

    return threading.Thread(target=run, daemon=True)


@pytest.mark.parametrize("line", [NOISE, CRASH], ids=["matches-nothing", "every-line-a-crash"])
async def test_a_flood_keeps_received_plus_lost_equal_to_sent(line: bytes) -> None:
    opener = FakeOpener()
    device = opener.add("/dev/flood")
    async with Engine(opener=opener) as engine:
        conn = await engine.open("/dev/flood", rx_buffer_size=1 << 20)
        live = engine.services.manager.get(conn.id)
        feeder = _feeder(device, line, TOTAL)
        feeder.start()
        got = lost = 0
        with anyio.fail_after(120):
            while got + lost < TOTAL:
                r = await conn.read(max_bytes=4 << 20, timeout_ms=2000, idle_ms=1, encoding="hex")
                got += len(r.data) // 2
                lost += r.bytes_lost
        await anyio.to_thread.run_sync(feeder.join)
        assert got + lost == TOTAL
        assert live.rx_end() == TOTAL
        await anyio.to_thread.run_sync(live.events.stop)  # scans what is left (bounded), then ends
        counters = live.events.detector.counters()
        assert counters["bytes_scanned"] + live.events.bytes_not_scanned == TOTAL
        status = live.events.status()
        assert counters["bytes_scanned"] >= 256 * 1024  # the newest bytes at least: the ring's tail
        if line is NOISE:
            assert status["crashes"] == 0 and status["boots"] == 0
            assert counters["lines_examined"] == 0
        else:
            assert status["crashes"] > 0, (status, counters, live.events.not_scanned.skips)
            assert counters["lines_examined"] >= counters["bytes_scanned"] // len(CRASH) - 2

