"""The engine alone, two checkouts A/B: ``transact`` through ``serial_mcp.Engine`` in process.

No MCP, no JSON, no pipe: what is left of a call is the engine's own work (options, the read
request, the write, the pump's wake-up, the ring and cursor, matching, the typed result) and the
device round trip over a PTY (an AT responder thread in the same process). Each checkout's engine
runs in a child process of its own, alternately (old, new, then new, old, ...) so the shared
machine's load drifts over both alike; each prints the median wall time of ``--calls`` transacts
and the event-loop thread's CPU per transact (``time.thread_time``), the steadier figure.

    python bench/ab_engine.py --old /path/to/old/checkout [--new .] [--calls 2000] [--rounds 6]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import asyncio, sys, time
sys.path.insert(0, sys.argv[2])
import serial_mcp
from _pty_devices import Responder, open_pty

async def run(calls: int) -> None:
    pair = open_pty()
    Responder(pair.master).start()
    async with serial_mcp.Engine() as eng:
        conn = await eng.open(pair.path)
        for _ in range(300):
            await conn.transact("AT\r", match="OK", timeout_ms=2000)
        walls = []
        cpu0 = time.thread_time()
        for _ in range(calls):
            t0 = time.perf_counter()
            await conn.transact("AT\r", match="OK", timeout_ms=2000)
            walls.append(time.perf_counter() - t0)
        cpu = (time.thread_time() - cpu0) / calls
        print(f"{sorted(walls)[calls // 2] * 1e6:.1f} {cpu * 1e6:.1f}")

asyncio.run(run(int(sys.argv[1])))
"""


def sample(checkout: Path, calls: int) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    bench = str(Path(__file__).resolve().parent)  # this checkout's PTY helpers, for both
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(calls), bench],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{checkout}: {out.stderr[-2000:]}")
    wall, cpu = map(float, out.stdout.split())
    return wall, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", type=Path, required=True, help="the other checkout (its serial_mcp is run)")
    ap.add_argument("--new", type=Path, default=REPO)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=6)
    args = ap.parse_args()
    trees = {"old": args.old.resolve(), "new": args.new.resolve()}
    got: dict[str, list[tuple[float, float]]] = {"old": [], "new": []}
    for r in range(args.rounds):
        for name in ("old", "new") if r % 2 == 0 else ("new", "old"):
            got[name].append(sample(trees[name], args.calls))
    print(f"{args.rounds} rounds of {args.calls} transacts each, alternating; medians over rounds")
    print(f"{'':4} {'wall p50 µs':>12} {'loop CPU µs/call':>17}  per round (CPU)")
    for name in ("old", "new"):
        walls, cpus = zip(*got[name], strict=True)
        rounds = " ".join(f"{c:.0f}" for c in cpus)
        print(f"{name:4} {statistics.median(walls):12.1f} {statistics.median(cpus):17.1f}  {rounds}")
    wall = statistics.median(w for w, _ in got["new"]) / statistics.median(w for w, _ in got["old"])
    cpu = statistics.median(c for _, c in got["new"]) / statistics.median(c for _, c in got["old"])
    print(f"new/old: wall {wall:.3f}, loop-thread CPU {cpu:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
