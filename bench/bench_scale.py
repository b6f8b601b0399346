"""A lab host's worth of ports: N PTYs streaming text at 115200 baud's byte rate into one real server, every
event family on, while one agent does transacts on another port (issue 40.6).

Starts a real ``python -m serial_mcp`` over stdio (the SDK client, as an installed server runs). One port is
the agent's: an AT responder in this process answers ``AT\\r`` with ``OK``. First, on the idle host (that port
only), ``--transacts`` transacts give the idle latency. Then ``N`` more ports are opened and one feeder
*process* writes NMEA text (real sentences from ``tests/data/nmea``, line-shaped) to every PTY master at
``--rate`` bytes a second each, in ``--hz`` writes a second spread over the period like unsynchronised
devices. After ``--warmup``, the server's CPU (``utime + stime``, all threads) is sampled over ``--seconds``
with nobody calling; then the same transacts run on the busy host. The feeder is stopped, and every port's
``rx_bytes`` must catch up with what the feeder wrote (received + lost at the device == sent, lost == 0).

It prints, per N: server CPU (% of one core; per port), the feeder's own CPU, RSS (idle, with N ports, per
port), bytes sent / received / lost, transact p50/p99 idle and busy and their ratio, and the goals (32 ports
≤ 3 %, 128 ports ≤ 10 % and ≤ 250 MiB, busy p99 ≤ 1.5× idle).

    python bench/bench_scale.py [--ports 32,128,256] [--seconds 10] [--transacts 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _pty_devices import (
    REPO,
    Responder,
    cpu_seconds,
    find_child,
    machine_note,
    open_pty,
    print_table,
    rss_kib,
    start_feeder,
    stop_feeder,
)

NMEA = REPO / "tests" / "data" / "nmea" / "quectel-l76k-nmea.log"
GOALS = {32: 3.0, 128: 10.0}  # % of one core
GOAL_RSS_MIB_128 = 250
GOAL_P99_RATIO = 1.5


@dataclass
class Scale:
    ports: int
    seconds: float
    cpu_pct: float
    feeder_pct: float
    rss_idle_kib: int
    rss_open_kib: int
    sent: int
    received: int
    lost: int
    consistent: bool
    idle_ms: list[float]
    busy_ms: list[float]


def _sc(result: Any, what: str) -> dict[str, Any]:
    if result.is_error:
        raise RuntimeError(f"{what} failed: {result.content[0].text if result.content else '?'}")
    out: dict[str, Any] = result.structured_content
    return out


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _transacts(client: Client, cid: str, n: int) -> list[float]:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        call = {"connection_id": cid, "data": "AT\r", "match": "OK"}
        r = _sc(await client.call_tool("transact", call), "transact")
        times.append((time.perf_counter() - t0) * 1000)
        if r["read"]["stop_reason"] != "match":
            raise RuntimeError(f"transact ended on {r['read']['stop_reason']}")
    return times


async def _scenario(nports: int, rate: int, hz: float, seconds: float, warmup: float, n_tx: int) -> Scale:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "serial_mcp"], cwd=str(REPO), env={"PYTHONPATH": str(REPO)}
    )
    agent = open_pty()
    responder = Responder(agent.master).start()
    pairs = [open_pty() for _ in range(nports)]
    piece = max(1, round(rate / hz))
    feeder: subprocess.Popen[bytes] | None = None
    try:
        async with Client(params, read_timeout_seconds=120) as client:
            pid = find_child("serial_mcp")
            cid = _sc(await client.call_tool("open", {"port": agent.path}), "open")["connection_id"]
            await _transacts(client, cid, 20)  # warm: the first calls load what start-up left out
            idle = await _transacts(client, cid, n_tx)
            rss_idle = rss_kib(pid)
            ids = [
                _sc(await client.call_tool("open", {"port": p.path}), "open")["connection_id"] for p in pairs
            ]
            feeder = start_feeder(pairs, NMEA, piece, hz)
            await asyncio.sleep(warmup)
            c0, f0, t0 = cpu_seconds(pid), cpu_seconds(feeder.pid), time.monotonic()
            await asyncio.sleep(seconds)
            c1, f1, t1 = cpu_seconds(pid), cpu_seconds(feeder.pid), time.monotonic()
            rss_open = rss_kib(pid)
            busy = await _transacts(client, cid, n_tx)
            sent, lost = stop_feeder(feeder)
            expected = [s - lo for s, lo in zip(sent, lost, strict=True)]
            received = [0] * nports
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                for i, port_id in enumerate(ids):
                    status = _sc(await client.call_tool("get_status", {"connection_id": port_id}), "status")
                    received[i] = status["rx_bytes"]
                if received == expected:
                    break
                await asyncio.sleep(0.2)
    finally:
        if feeder is not None and feeder.poll() is None:
            feeder.kill()
            feeder.wait()
        responder.stop()
        for p in [agent, *pairs]:
            p.close()
    elapsed = t1 - t0
    return Scale(
        ports=nports,
        seconds=elapsed,
        cpu_pct=(c1 - c0) / elapsed * 100,
        feeder_pct=(f1 - f0) / elapsed * 100,
        rss_idle_kib=rss_idle,
        rss_open_kib=rss_open,
        sent=sum(sent),
        received=sum(received),
        lost=sum(lost),
        consistent=received == expected,
        idle_ms=idle,
        busy_ms=busy,
    )


def report(results: list[Scale], rate: int) -> None:
    what = f"N ports × {rate} B/s of NMEA text, every event family on, one agent transacting"
    print(f"scale: {what} — {machine_note()}")
    rows = []
    for r in results:
        idle99, busy99 = _pct(r.idle_ms, 0.99), _pct(r.busy_ms, 0.99)
        rows.append(
            [
                str(r.ports),
                f"{r.cpu_pct:.1f}",
                f"{r.cpu_pct / r.ports:.3f}",
                f"{r.feeder_pct:.1f}",
                f"{r.rss_idle_kib / 1024:.0f}/{r.rss_open_kib / 1024:.0f}",
                f"{(r.rss_open_kib - r.rss_idle_kib) / r.ports:.0f}",
                f"{r.sent}",
                f"{r.lost}",
                "yes" if r.consistent and r.received + r.lost == r.sent else "NO",
                f"{statistics.median(r.idle_ms):.2f}/{idle99:.2f}",
                f"{statistics.median(r.busy_ms):.2f}/{busy99:.2f}",
                f"{busy99 / idle99:.2f}",
            ]
        )
    print_table(
        [
            "ports",
            "server CPU %",
            "% per port",
            "feeder CPU %",
            "RSS MiB idle/N",
            "KiB per port",
            "sent B",
            "lost B",
            "rx+lost==sent",
            "transact ms p50/p99 idle",
            "busy",
            "p99 busy÷idle",
        ],
        rows,
    )
    for r in results:
        goal = GOALS.get(r.ports)
        ratio = _pct(r.busy_ms, 0.99) / _pct(r.idle_ms, 0.99)
        verdicts = [f"p99 {ratio:.2f}× idle (goal ≤ {GOAL_P99_RATIO})", f"lost {r.lost} B (goal 0)"]
        if goal is not None:
            verdicts.insert(0, f"CPU {r.cpu_pct:.1f} % = {r.cpu_pct / goal:.2f}× the goal (≤ {goal:g} %)")
        if r.ports == 128:
            verdicts.append(f"RSS {r.rss_open_kib / 1024:.0f} MiB (goal ≤ {GOAL_RSS_MIB_128})")
        print(f"{r.ports} ports: " + "; ".join(verdicts))


async def run(ports: list[int], rate: int, hz: float, seconds: float, warmup: float, n_tx: int) -> None:
    results = [await _scenario(n, rate, hz, seconds, warmup, n_tx) for n in ports]
    report(results, rate)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ports", default="32,128,256", help="N,N,... streaming ports per scenario")
    p.add_argument("--rate", type=int, default=11520, help="bytes a second per port (115200 baud 8N1)")
    p.add_argument("--hz", type=float, default=100.0, help="writes per port per second (default 100)")
    p.add_argument("--seconds", type=float, default=10.0, help="CPU sample length (default 10 s)")
    p.add_argument("--warmup", type=float, default=2.0, help="streaming before the sample (default 2 s)")
    p.add_argument("--transacts", type=int, default=200, help="transacts idle and busy (default 200)")
    args = p.parse_args()
    ports = [int(x) for x in args.ports.split(",")]
    asyncio.run(run(ports, args.rate, args.hz, args.seconds, args.warmup, args.transacts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
