"""First-byte wake-up latency: a byte lands on the PTY master → a waiting read returns.

In-process engine (``ConnectionManager(SystemOpener())``), no MCP: this isolates the pump → waiter
path that a ``read``/``transact`` call sleeps in. Two cases, interleaved:

* **idle port**: nothing arrived for a while; the pump sleeps in ``select``.
* **trickling port**: 115 bytes arrived 5 ms earlier and nobody waited, so the pump is *lingering*
  (see ``serial_mcp/serial/pump.py``); the waiter's poke must end the linger.

Each sample: register ``conn.wait_change`` (seen_end = the ring end), write one byte to the master,
and time until the wait returns. Goal (issue): ≤ 1 ms p50.

    python bench/bench_wakeup.py [--samples 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _pty_devices import machine_note, median, monotonic, open_pty, percentile, print_table

from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.system_open import SystemOpener


async def _sample(conn: object, master: int, trickle: bool) -> float:
    c = conn  # a serial.connection.Connection
    if trickle:
        os.write(master, b"t" * 115)
        await asyncio.sleep(0.005)  # the pump took it and now lingers (nobody waits)
    else:
        await asyncio.sleep(0.06)  # longer than a linger: the pump is back in select
    seen = c.ring.end_offset  # type: ignore[attr-defined]
    waiter = asyncio.ensure_future(c.wait_change(2.0, seen))  # type: ignore[attr-defined]
    await asyncio.sleep(0)  # the waiter registers (and pokes a lingering pump)
    t0 = monotonic()
    os.write(master, b"!")
    await waiter
    return (monotonic() - t0) * 1000


async def run(samples: int) -> None:
    pair = open_pty()
    mgr = ConnectionManager(SystemOpener())
    conn = await mgr.open(pair.path)
    idle: list[float] = []
    trickle: list[float] = []
    try:
        for _ in range(samples):
            idle.append(await _sample(conn, pair.master, False))
            trickle.append(await _sample(conn, pair.master, True))
    finally:
        await mgr.close_all()
        pair.close()
    print(f"first-byte wake-up latency, {samples} samples each — {machine_note()}")
    print_table(
        ["case", "p50 ms", "p90 ms", "max ms"],
        [
            [name, f"{median(v):.3f}", f"{percentile(v, 90):.3f}", f"{max(v):.3f}"]
            for name, v in (("idle port", idle), ("trickling port (pump lingering)", trickle))
        ],
    )
    worst = max(median(idle), median(trickle))
    print(f"goal ≤ 1 ms p50: {'met' if worst <= 1.0 else 'NOT met'}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--samples", type=int, default=200)
    args = p.parse_args()
    asyncio.run(run(args.samples))
    return 0


if __name__ == "__main__":
    sys.exit(main())
