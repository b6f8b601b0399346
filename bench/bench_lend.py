"""Lend and take back: how soon after a borrower exits does serial-mcp have the port again?

In-process engine (``ConnectionManager(SystemOpener())``) on a PTY. Each sample: ``Lend.start``
(release), run a borrower process (pyserial opens the node, writes, holds it ``--hold-ms``, closes,
exits), then time from the borrower's exit (``wait`` returned) to the connection being ``open``
again. Two watches, interleaved: **events** (inotify open/close + a /proc scan, the default) and
**scans** (the /proc scan every 200 ms alone, the fallback where inotify is missing). A borrower
the watch never saw is taken back only at the deadline (``--timeout-ms``): counted as missed.
The figure includes the 0.5 s grace that lets a flasher close and reopen the port.

    python bench/bench_lend.py [--samples 10] [--hold-ms 0] [--timeout-ms 5000]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _pty_devices import machine_note, median, monotonic, open_pty, percentile, print_table

from serial_mcp.serial.connection import Connection
from serial_mcp.serial.lending import Lend
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.system_open import SystemOpener

BORROWER = """
import sys, time, serial
port = serial.Serial(sys.argv[1], 115200)
port.write(b"x")
time.sleep(float(sys.argv[2]))
port.close()
"""


async def _sample(
    conn: Connection, path: str, events: bool, hold_s: float, timeout_s: float
) -> tuple[float, str]:
    await Lend(conn, timeout_s, events=events).start()
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", BORROWER, path, str(hold_s))
    await proc.wait()
    exited = monotonic()
    while conn.state != "open":
        await conn.wait_change(30)
    back = monotonic()
    reason = next(e.fields.get("reason") for e in reversed(conn.log.since(0)) if e.type == "reclaim")
    return (back - exited) * 1000, str(reason)


async def run(samples: int, hold_ms: int, timeout_ms: int) -> None:
    pair = open_pty()
    mgr = ConnectionManager(SystemOpener())
    conn = await mgr.open(pair.path)
    got: dict[str, list[float]] = {"events": [], "scans": []}
    missed = {"events": 0, "scans": 0}
    try:
        for _ in range(samples):
            for mode in ("events", "scans"):
                ms, reason = await _sample(
                    conn, pair.path, mode == "events", hold_ms / 1000, timeout_ms / 1000
                )
                if reason == "holder_left":
                    got[mode].append(ms)
                else:
                    missed[mode] += 1
    finally:
        await mgr.close_all()
        pair.close()
    print(f"borrower exit -> port open again, {samples} samples, hold {hold_ms} ms — {machine_note()}")
    rows = []
    for mode, v in got.items():
        figures = [f"{median(v):.0f}", f"{percentile(v, 90):.0f}", f"{max(v):.0f}"] if v else ["-", "-", "-"]
        rows.append([mode, *figures, f"{missed[mode]}/{samples}"])
    print_table(["watch", "p50 ms", "p90 ms", "max ms", "missed (deadline)"], rows)
    if got["events"] and got["scans"]:
        print(f"events / scans p50: {median(got['events']) / median(got['scans']):.2f}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--samples", type=int, default=10)
    p.add_argument("--hold-ms", type=int, default=0)
    p.add_argument("--timeout-ms", type=int, default=5000)
    args = p.parse_args()
    asyncio.run(run(args.samples, args.hold_ms, args.timeout_ms))
    return 0


if __name__ == "__main__":
    sys.exit(main())
