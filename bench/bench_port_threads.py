"""Where a streaming port's cost goes, per thread: N PTY ports in an in-process ``Engine`` (ports unread),
one feeder process writing NMEA text to every master at 115200 baud's byte rate, and each thread's own
CPU clock (``pthread_getcpuclockid``) read before and after ``--seconds``: the pumps, the event watches,
the event loop and the rest, as % of one core in all and per port (issue 40.1).

    python bench/bench_port_threads.py [--ports 32,128] [--seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _pty_devices import REPO, cpu_seconds, machine_note, open_pty, print_table, start_feeder, stop_feeder
from bench_scale import NMEA

sys.path.insert(0, str(REPO))

from serial_mcp import Engine


def _group(name: str) -> str:
    for prefix in ("rx-pump", "events-"):
        if name.startswith(prefix):
            return prefix.rstrip("-")
    return "event loop" if name == "MainThread" else "other"


def _thread_cpu() -> dict[str, float]:
    out: dict[str, float] = {}
    for th in threading.enumerate():
        if th.ident is None:
            continue
        try:
            clock = time.pthread_getcpuclockid(th.ident)
            spent = time.clock_gettime(clock)
        except (OSError, ProcessLookupError):
            continue
        out[f"{th.ident} {th.name}"] = spent
    return out


async def _scenario(nports: int, rate: int, hz: float, seconds: float, warmup: float) -> dict[str, float]:
    pairs = [open_pty() for _ in range(nports)]
    piece = max(1, round(rate / hz))
    feeder = None
    try:
        async with Engine() as engine:
            for p in pairs:
                await engine.open(p.path)
            feeder = start_feeder(pairs, NMEA, piece, hz)
            await asyncio.sleep(warmup)
            import os

            before, p0, t0 = _thread_cpu(), cpu_seconds(os.getpid()), time.monotonic()
            await asyncio.sleep(seconds)
            after, p1, t1 = _thread_cpu(), cpu_seconds(os.getpid()), time.monotonic()
            stop_feeder(feeder)
    finally:
        if feeder is not None and feeder.poll() is None:
            feeder.kill()
        for p in pairs:
            p.close()
    elapsed = t1 - t0
    groups: dict[str, float] = {"process": (p1 - p0) / elapsed * 100}
    for key, spent in after.items():
        name = key.split(" ", 1)[1]
        g = _group(name)
        groups[g] = groups.get(g, 0.0) + (spent - before.get(key, spent)) / elapsed * 100
    return groups


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ports", default="32,128")
    p.add_argument("--rate", type=int, default=11520)
    p.add_argument("--hz", type=float, default=100.0)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--warmup", type=float, default=2.0)
    args = p.parse_args()
    rows = []
    for n in (int(x) for x in args.ports.split(",")):
        g = asyncio.run(_scenario(n, args.rate, args.hz, args.seconds, args.warmup))
        rows.append(
            [str(n)]
            + [
                f"{g.get(k, 0.0):.2f} ({g.get(k, 0.0) / n:.3f})"
                for k in ("process", "rx-pump", "events", "event loop")
            ]
            + [f"{g.get('other', 0.0):.2f}"]
        )
    print(f"per-thread CPU, % of one core (per port), ports unread — {machine_note()}")
    print_table(["ports", "process", "pumps", "event watches", "event loop", "other"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
