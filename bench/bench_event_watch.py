"""What the per-connection event watch costs the RX path (issue 24.2), same run, same machine.

An in-memory device floods ``--size-mb`` of text; the pump ingests it into the ring while a reader drains
it. Timed: from the first byte fed to the reader having everything, with the event watch running (as on
every connection) and with it stopped (the baseline). Unpaced (as fast as the in-memory device feeds):
MB/s each way and their ratio; paced at ``--rate-mbs`` (a fast USB UART is 1-12 MB/s): process CPU per
MiB each way. Plus what the watch scanned and skipped. Text that matches no signature (NMEA) and text
where every line is a crash head. Run: ``python bench/bench_event_watch.py --size-mb 16``.
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


async def one(line: bytes, total: int, watch: bool, rate: float = 0.0) -> tuple[float, float, int, int]:
    """(wall seconds, process CPU seconds, bytes scanned, bytes not scanned) of one flood; ``rate`` in
    bytes/s paces the device (0: as fast as it can feed)."""
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
            start = time.perf_counter()
            while sent < total:
                piece = block[: total - sent]
                device.feed(piece)
                sent += len(piece)
                if rate:  # a device sends at its line rate: wait for the next piece's time
                    ahead = start + sent / rate - time.perf_counter()
                    if ahead > 0:
                        time.sleep(ahead)

        t0, c0 = time.perf_counter(), time.process_time()
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
        cpu = time.process_time() - c0
        return elapsed, cpu, live.events.detector.counters()["bytes_scanned"], live.events.bytes_not_scanned


async def main(size_mb: int, rounds: int, rate_mbs: float) -> None:
    total = size_mb << 20
    mib = total / (1 << 20)
    for name, line in (("matches nothing", NOISE), ("every line a crash", CRASH)):
        base = min([await one(line, total, False) for _ in range(rounds)])
        best = min([await one(line, total, True) for _ in range(rounds)])
        print(
            f"{name:18s} unpaced: {total / base[0] / 1e6:6.1f} MB/s without the watch,"
            f" {total / best[0] / 1e6:6.1f} with (ratio {base[0] / best[0]:.2f});"
            f" scanned {best[2] >> 10} KiB, skipped {best[3] >> 10} KiB"
        )
        rate = rate_mbs * 1e6
        base = min([await one(line, total, False, rate) for _ in range(rounds)], key=lambda r: r[1])
        best = min([await one(line, total, True, rate) for _ in range(rounds)], key=lambda r: r[1])
        print(
            f"{'':18s} at {rate_mbs:g} MB/s: CPU {base[1] / mib * 1000:6.1f} ms/MiB without the watch,"
            f" {best[1] / mib * 1000:6.1f} with (+{(best[1] - base[1]) / base[1] * 100:5.1f} %);"
            f" scanned {best[2] >> 10} KiB, skipped {best[3] >> 10} KiB"
        )


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rate-mbs", type=float, default=4.0, help="the paced run's device rate, MB/s")
    a = ap.parse_args()
    anyio.run(main, a.size_mb, a.rounds, a.rate_mbs)
