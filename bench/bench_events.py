"""Cost of the crash/boot event detector (serial_mcp.core.events) per MiB of received text.

Not a test: prints a table. Each case repeats real data to ``--size-mb`` and feeds it in ``--chunk``-byte
reads, as the pump would, timing ``EventDetector.feed`` (best of ``--repeat``). Cases:

* ``noise``: the gpsd NMEA logs of tests/data/nmea (no trigger anywhere): the prefilter's cost alone;
* ``boot logs``: the OpenWrt and ESP32 boot logs of tests/data/bootlogs (a few banners per copy);
* ``crash logs``: tests/data/crashes (a panic, a dump and a reset in every few KiB);
* ``all triggers``: every line holds a trigger (a Guru Meditation head), the worst case: every line examined.

The baseline rows: the same detector with its prefilter's RE2 fallback (what it was before the Aho-Corasick
prefilter, and what an install without ``ahocorasick_rs`` runs), and one ``bytes.count(b"\\n")`` over the same
stream: a C pass over the bytes, for scale.
CPU time (``time.process_time``) is the headline figure because the machine is shared; it may still be
loaded: compare rows of one run, not runs.

    python bench/bench_events.py [--size-mb 16] [--chunk 65536] [--repeat 5]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from unittest import mock

from serial_mcp.core.events import EventDetector, prefilter

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"


def _stream(parts: list[bytes], size: int) -> bytes:
    base = b"".join(parts)
    return (base * (size // len(base) + 1))[:size]


def _feed(data: bytes, chunk: int, fallback: bool = False) -> tuple[float, float, int, int]:
    if fallback:
        with mock.patch.object(prefilter, "_ac", None):
            detector = EventDetector()
        assert not detector._trigger.fast
    else:
        detector = EventDetector()
    chunks = [data[i : i + chunk] for i in range(0, len(data), chunk)]
    c0, t0 = time.process_time(), time.perf_counter()
    events = 0
    for i, piece in enumerate(chunks):
        events += len(detector.feed(piece, i * chunk, 0.0))
    events += len(detector.flush())
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    return cpu, wall, events, detector.counters()["lines_examined"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=float, default=16)
    parser.add_argument("--chunk", type=int, default=65536)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    size = int(args.size_mb * (1 << 20))
    cases = {
        "noise (NMEA)": [p.read_bytes() for p in sorted((DATA / "nmea").glob("*.log"))],
        "boot logs": [p.read_bytes() for p in sorted((DATA / "bootlogs").rglob("*.txt"))],
        "crash logs": [p.read_bytes() for p in sorted((DATA / "crashes").glob("*.txt"))],
        "all triggers": [
            b"Guru Meditation Error: Core  0 panic'ed (LoadProhibited). Exception was unhandled.\r\n"
        ],
    }
    mib = size / (1 << 20)
    print(
        f"{mib:.0f} MiB per case, {args.chunk}-byte feeds, best of {args.repeat} (CPU time, and wall clock)"
    )
    print(f"{'case':<16} {'CPU ms/MiB':>11} {'wall ms/MiB':>12} {'events':>8} {'lines examined':>15}")
    for name, parts in cases.items():
        if not parts:
            continue
        data = _stream(parts, size)
        for label, fallback in ((name, False), ("  RE2 fallback", True)):
            runs = [_feed(data, args.chunk, fallback) for _ in range(args.repeat)]
            cpu, wall = min(r[0] for r in runs), min(r[1] for r in runs)
            rate = f"{cpu * 1000 / mib:11.3f} {wall * 1000 / mib:12.3f}"
            print(f"{label:<16} {rate} {runs[0][2]:8d} {runs[0][3]:15d}")
        base = 9e9
        for _ in range(args.repeat):
            c0 = time.process_time()
            data.count(b"\n")
            base = min(base, time.process_time() - c0)
        print(f"{'  bytes.count':<16} {base * 1000 / mib:11.3f}")


if __name__ == "__main__":
    main()
