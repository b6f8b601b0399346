"""Idle cost of the server: CPU with open idle ports, and resident memory (RSS).

Starts a real ``python -m serial_mcp`` over stdio (through the SDK client), finds its pid among this
process's children, then samples ``/proc/<pid>/stat`` (utime + stime, all threads) over ``--seconds``
of idleness with 0 open ports and again with ``--ports`` open, idle PTY ports. RSS (``VmRSS``) is read
with 0 ports, with the ports open, and after every ring is filled (each far end writes 1.5 × the
ring size, so each ring wraps). Goal (issue): idle CPU ≤ 0.5 % of one core per open port.

    python bench/bench_idle.py [--seconds 10] [--ports 4]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _pty_devices import (
    CLK_TCK,
    REPO,
    cpu_seconds,
    find_child,
    machine_note,
    monotonic,
    open_pty,
    print_table,
    rss_kib,
    thread_cpu_seconds,
)

GOAL_PCT_PER_PORT = 0.5
DEFAULT_RING = 256 * 1024


def _sc(result: Any, what: str) -> dict[str, Any]:
    if result.is_error:
        text = result.content[0].text if result.content else "?"
        raise RuntimeError(f"{what} failed: {text}")
    sc: dict[str, Any] = result.structured_content
    return sc


async def _idle_cpu(pid: int, seconds: float) -> tuple[float, dict[str, float]]:
    """Percent of one core used by ``pid`` over ``seconds`` of (our) silence, and per-thread CPU seconds."""
    threads0 = thread_cpu_seconds(pid)
    c0, t0 = cpu_seconds(pid), monotonic()
    await asyncio.sleep(seconds)
    c1, t1 = cpu_seconds(pid), monotonic()
    threads1 = thread_cpu_seconds(pid)
    per_thread = {k: v - threads0.get(k, 0.0) for k, v in threads1.items() if v - threads0.get(k, 0.0) > 0}
    return (c1 - c0) / (t1 - t0) * 100, per_thread


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


async def _wait_rx(client: Client, conn_id: str, total: int, timeout_s: float = 20.0) -> None:
    deadline = monotonic() + timeout_s
    while monotonic() < deadline:
        st = _sc(await client.call_tool("get_status", {"connection_id": conn_id}), "get_status")
        if st["rx_bytes"] >= total:
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"{conn_id}: ring did not fill ({total} bytes expected)")


async def run(seconds: float, nports: int) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "serial_mcp"],
        cwd=str(REPO),
        env={"PYTHONPATH": str(REPO)},
    )
    pairs = [open_pty() for _ in range(nports)]
    try:
        async with Client(params, read_timeout_seconds=30) as client:
            pid = find_child("serial_mcp")
            await client.call_tool("list_connections", {})
            await asyncio.sleep(1.0)  # let start-up settle
            rss0 = rss_kib(pid)
            cpu0, _ = await _idle_cpu(pid, seconds)

            ids = [
                _sc(await client.call_tool("open", {"port": p.path}), "open")["connection_id"] for p in pairs
            ]
            await asyncio.sleep(1.0)
            rss_open = rss_kib(pid)
            cpu_n, threads_n = await _idle_cpu(pid, seconds)

            fill = DEFAULT_RING * 3 // 2
            block = bytes(range(256)) * (fill // 256)
            for p in pairs:  # blocking writes, drained by the server's pumps: off the loop
                await asyncio.to_thread(_write_all, p.master, block)
            for conn_id in ids:
                await _wait_rx(client, conn_id, fill)
            await asyncio.sleep(0.5)
            rss_full = rss_kib(pid)
            for conn_id in ids:
                _sc(await client.call_tool("close", {"connection_id": conn_id}), "close")
            await asyncio.sleep(0.5)
            rss_closed = rss_kib(pid)
    finally:
        for p in pairs:
            p.close()

    print(f"idle server: {seconds:g} s per sample, {nports} idle PTY ports — {machine_note()}")
    per_port = cpu_n / nports
    resolution = 100 / CLK_TCK / seconds  # one clock tick over the sample, in % of a core
    delta = (cpu_n - cpu0) / nports
    print_table(
        ["state", "CPU % of a core", "RSS MiB"],
        [
            ["0 ports, idle", f"{cpu0:.3f}", f"{rss0 / 1024:.1f}"],
            [f"{nports} ports open, idle", f"{cpu_n:.3f}", f"{rss_open / 1024:.1f}"],
            [f"{nports} rings filled (256 KiB each, wrapped)", "-", f"{rss_full / 1024:.1f}"],
            [f"after closing the {nports}", "-", f"{rss_closed / 1024:.1f}"],
        ],
    )
    print(f"\n/proc CPU resolution: one tick = {resolution:.3f} % of a core over {seconds:g} s")
    if cpu_n == 0:
        print(f"no clock tick used in {seconds:g} s: < {resolution / nports:.3f} % of a core per port")
    print(
        f"idle CPU per open port: {per_port:.3f} % of a core (whole server / {nports}); "
        f"{delta:+.3f} % over the 0-port baseline  (goal ≤ {GOAL_PCT_PER_PORT} %: "
        f"{'met' if per_port <= GOAL_PCT_PER_PORT else 'NOT met'})"
    )
    print(
        f"RSS per open port: {(rss_open - rss0) / nports:.0f} KiB; per filled ring: "
        f"{(rss_full - rss_open) / nports:.0f} KiB more"
    )
    busy = sorted(threads_n.items(), key=lambda kv: -kv[1])[:5]
    if busy:
        print(
            "threads that used CPU while idle with ports open: "
            + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in busy)
        )
    else:
        print("no server thread used a measurable amount of CPU while idle with ports open")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=10.0, help="idle sample length (default 10 s)")
    p.add_argument("--ports", type=int, default=4, help="open idle PTY ports (default 4)")
    args = p.parse_args()
    asyncio.run(run(args.seconds, max(1, args.ports)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
