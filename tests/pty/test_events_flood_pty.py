"""Issue 40.2: the event detector keeps up with a flood on a real PTY (the kernel hands the pump at most
4 KiB a read): the pump scans the flood itself between reads, a quarter of the ring behind at most, so the
ring (256 KiB by default) never drops a byte the detector has not seen. Handed to the watch thread at
512 KiB of lag instead, half of every such flood went unscanned (counted, but not looked at)."""

from __future__ import annotations

import os
import threading

import anyio
import pytest

from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.system_open import SystemOpener

pytestmark = pytest.mark.anyio

NOISE = b"$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47\r\n"
CRASH = b"Guru Meditation Error: Core  0 panic'ed (LoadProhibited). Exception was unhandled.\r\n"
TOTAL = 8 << 20


async def test_a_flood_on_the_default_ring_is_scanned_in_full_and_its_crash_found() -> None:
    master, slave = os.openpty()
    os.set_blocking(master, True)
    body = NOISE * (TOTAL // len(NOISE))
    flood = body[: TOTAL // 2] + CRASH + body[TOTAL // 2 :]
    flood = flood[: TOTAL - len(NOISE)] + NOISE[: TOTAL - len(flood[: TOTAL - len(NOISE)])]
    manager = ConnectionManager(SystemOpener())
    try:
        conn = await manager.open(os.ttyname(slave))
        writer = threading.Thread(target=lambda: os.write(master, flood) and None, daemon=True)
        writer.start()
        with anyio.fail_after(120):  # a bound on a hang, not a speed
            while conn.rx_end() < len(flood):
                await conn.wait_change(1.0, conn.rx_end())
        await anyio.to_thread.run_sync(writer.join)
        await anyio.to_thread.run_sync(conn.events.stop)
        counters = conn.events.detector.counters()
        scanned = (counters["bytes_scanned"], conn.events.bytes_not_scanned)
        assert scanned == (len(flood), 0), conn.events.not_scanned.last()
        assert conn.events.status()["crashes"] == 1
    finally:
        await manager.close_all()
        os.close(master)
        os.close(slave)
