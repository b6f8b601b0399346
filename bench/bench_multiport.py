"""Cost per received chunk: many live ports, all open and unread, in a real server.

Starts a real ``python -m serial_mcp`` over stdio (the SDK client, as an installed server runs) and
opens ``N`` PTY ports in it. A feeder *process* (not the server, not this process's threads) writes
``--chunk`` bytes to every PTY master ``--hz`` times a second, the ports spread evenly over each period
like unsynchronised devices. The writes are non-blocking: a write the kernel refuses (PTY full because
the server fell behind) is counted as lost at the device, as a UART overrun would be. Nobody reads the
connections. Over ``--seconds`` of streaming the script samples the server's ``utime + stime`` (all
threads, ``/proc``), then stops the feeder and waits until every port's ``rx_bytes`` has caught up.

It prints per scenario: server CPU (% of one core, total and per port), CPU µs per chunk written, the
busiest threads, bytes sent / received / lost (received + lost == sent is checked), RSS, and the
ratio to the issue's goal (32 × 11.5 KB/s ≤ 5 % of a core).

    python bench/bench_multiport.py [--scenarios 32x115,64x115,8x10000] [--hz 100] [--seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _pty_devices import (
    REPO,
    cpu_seconds,
    find_child,
    machine_note,
    monotonic,
    open_pty,
    print_table,
    rss_kib,
    start_feeder,
    stop_feeder,
    thread_cpu_seconds,
)

GOAL_PCT_32 = 5.0


@dataclass
class Result:
    name: str
    ports: int
    chunk: int
    hz: float
    seconds: float
    cpu_pct: float
    chunks: int
    sent: int
    received: int
    lost: int
    rss_open_kib: int
    rss_end_kib: int
    rss_base_kib: int
    threads: dict[str, float]
    consistent: bool

    @property
    def us_per_chunk(self) -> float:
        return self.cpu_pct / 100 * self.seconds / max(1, self.chunks_in_sample) * 1e6

    @property
    def chunks_in_sample(self) -> int:
        return round(self.ports * self.hz * self.seconds)


def _sc(result: Any, what: str) -> dict[str, Any]:
    if result.is_error:
        text = result.content[0].text if result.content else "?"
        raise RuntimeError(f"{what} failed: {text}")
    sc: dict[str, Any] = result.structured_content
    return sc


async def _scenario(nports: int, chunk: int, hz: float, seconds: float, warmup: float) -> Result:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "serial_mcp"], cwd=str(REPO), env={"PYTHONPATH": str(REPO)}
    )
    pairs = [open_pty() for _ in range(nports)]
    feeder: subprocess.Popen[bytes] | None = None
    try:
        async with Client(params, read_timeout_seconds=60) as client:
            pid = find_child("serial_mcp")
            await client.call_tool("list_connections", {})
            await asyncio.sleep(0.5)
            rss_base = rss_kib(pid)
            ids = [
                _sc(await client.call_tool("open", {"port": p.path}), "open")["connection_id"] for p in pairs
            ]
            feeder = start_feeder(pairs, None, chunk, hz)
            await asyncio.sleep(warmup)
            th0 = thread_cpu_seconds(pid)
            c0, t0 = cpu_seconds(pid), monotonic()
            await asyncio.sleep(seconds)
            c1, t1 = cpu_seconds(pid), monotonic()
            th1 = thread_cpu_seconds(pid)
            rss_open = rss_kib(pid)
            sent_per, lost_per = stop_feeder(feeder)
            expected = [s - lost for s, lost in zip(sent_per, lost_per, strict=True)]
            received = [0] * nports
            deadline = monotonic() + 20
            while monotonic() < deadline:
                for i, cid in enumerate(ids):
                    received[i] = _sc(await client.call_tool("get_status", {"connection_id": cid}), "status")[
                        "rx_bytes"
                    ]
                if received == expected:
                    break
                await asyncio.sleep(0.1)
            rss_end = rss_kib(pid)
            for cid in ids:
                await client.call_tool("close", {"connection_id": cid})
    finally:
        if feeder is not None and feeder.poll() is None:
            feeder.kill()
            feeder.wait()
        for p in pairs:
            p.close()
    elapsed = t1 - t0
    threads: dict[str, float] = {}
    for k, v in th1.items():
        d = v - th0.get(k, 0.0)
        if d > 0:
            name = k.split(" ", 1)[1]
            group = "rx-pump-*" if name.startswith("rx-pump") else name
            threads[group] = threads.get(group, 0.0) + d
    return Result(
        name=f"{nports}×{chunk} B @ {hz:g}/s",
        ports=nports,
        chunk=chunk,
        hz=hz,
        seconds=elapsed,
        cpu_pct=(c1 - c0) / elapsed * 100,
        chunks=sum(sent_per) // chunk,
        sent=sum(sent_per),
        received=sum(received),
        lost=sum(lost_per),
        rss_open_kib=rss_open,
        rss_end_kib=rss_end,
        rss_base_kib=rss_base,
        threads={k: v / elapsed * 100 for k, v in threads.items()},
        consistent=received == expected,
    )


def _parse(spec: str) -> tuple[int, int]:
    n, _, size = spec.partition("x")
    return int(n), int(size)


async def run(specs: list[str], hz: float, seconds: float, warmup: float) -> None:
    results = [await _scenario(*_parse(s), hz, seconds, warmup) for s in specs]
    print(f"multi-port ingest, real server over stdio, ports unread — {machine_note()}")
    rows = []
    for r in results:
        rows.append(
            [
                r.name,
                f"{r.ports * r.chunk * r.hz / 1000:.0f} KB/s",
                f"{r.cpu_pct:.1f}",
                f"{r.cpu_pct / r.ports:.2f}",
                f"{r.us_per_chunk:.1f}",
                f"{r.sent}",
                f"{r.received}",
                f"{r.lost}",
                "yes" if r.consistent and r.received + r.lost == r.sent else "NO",
                f"{r.rss_base_kib / 1024:.1f}/{r.rss_open_kib / 1024:.1f}",
            ]
        )
    print_table(
        [
            "load",
            "total",
            "CPU % core",
            "% per port",
            "µs/chunk",
            "sent B",
            "received B",
            "lost B",
            "rx+lost==sent",
            "RSS MiB 0/N",
        ],
        rows,
    )
    for r in results:
        busy = sorted(r.threads.items(), key=lambda kv: -kv[1])[:4]
        print(f"{r.name}: " + ", ".join(f"{k} {v:.1f} %" for k, v in busy))
        if r.ports == 32 and r.chunk == 115:
            print(
                f"  32 × 11.5 KB/s: {r.cpu_pct:.1f} % of a core = {r.cpu_pct / GOAL_PCT_32:.2f}× the goal "
                f"(≤ {GOAL_PCT_32:g} %): {'met' if r.cpu_pct <= GOAL_PCT_32 else 'NOT met'}"
            )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenarios", default="32x115,64x115,8x10000", help="NxBYTES,... (per write)")
    p.add_argument("--hz", type=float, default=100.0, help="writes per port per second (default 100)")
    p.add_argument("--seconds", type=float, default=10.0, help="CPU sample length (default 10 s)")
    p.add_argument("--warmup", type=float, default=1.0, help="streaming before the sample (default 1 s)")
    args = p.parse_args()
    asyncio.run(run(args.scenarios.split(","), args.hz, args.seconds, args.warmup))
    return 0


if __name__ == "__main__":
    sys.exit(main())
