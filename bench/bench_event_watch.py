"""What the per-connection event watch costs the RX path (issue 24.2), same run, same machine.

An in-memory device floods ``--size-mb`` of text; the pump ingests it into the ring while a reader drains
it. Timed: from the first byte fed to the reader having everything, with the event watch running (as on
every connection) and with it stopped (the baseline). Figures: MB/s each way and their ratio, plus what
the watch scanned and skipped. Text that matches no signature (NMEA) and text where every line is a crash
head. Run: ``python bench/bench_event_watch.py --size-mb 64``.
"""

from __future__ import annotations

import argparse
import threading
import time

import anyio

from serial_mcp import Engine
from serial_mcp.serial.fake import FakeOpener

NOISE = b"$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47\r\n"
CRASH = b"Guru Meditation Error: Core  0 panic'ed (LoadProhibited). Exception was unhandled.\r\n"


async def one(line: bytes, total: int, watch: bool) -> tuple[float, int, int]:
    opener = FakeOpener()
    device = opener.add("/dev/flood")
    async with Engine(opener=opener) as engine:
        conn = await engine.open("/dev/flood", rx_buffer_size=4 << 20)
        live = engine.services.manager.get(conn.id)
        if not watch:
            await anyio.to_thread.run_sync(live.events.stop)
        block = line * (65536 // len(line))

        def feed() -> None:
            sent = 0
            while sent < total:
                piece = block[: total - sent]
                device.feed(piece)
                sent += len(piece)

        t0 = time.perf_counter()
        feeder = threading.Thread(target=feed, daemon=True)
        feeder.start()
        got = 0
        while got < total:
            r = await conn.read(max_bytes=4 << 20, timeout_ms=2000, idle_ms=1, encoding="hex")
            got += len(r.data) // 2 + r.bytes_lost
        elapsed = time.perf_counter() - t0
        feeder.join()
        if watch:
            await anyio.to_thread.run_sync(live.events.stop)
        return elapsed, live.events.detector.counters()["bytes_scanned"], live.events.bytes_not_scanned


async def main(size_mb: int, rounds: int) -> None:
    total = size_mb << 20
    for name, line in (("matches nothing", NOISE), ("every line a crash", CRASH)):
        base = min([(await one(line, total, False))[0] for _ in range(rounds)])
        runs = [await one(line, total, True) for _ in range(rounds)]
        best = min(runs)
        print(
            f"{name:20s} baseline {total / base / 1e6:7.1f} MB/s  with events {total / best[0] / 1e6:7.1f} MB/s"
            f"  ratio {base / best[0]:.2f}  scanned {best[1] >> 10} KiB, not scanned {best[2] >> 10} KiB"
        )


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    anyio.run(main, a.size_mb, a.rounds)
