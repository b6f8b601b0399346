"""``transact`` round trip over stdio vs a trivial tool call plus the raw PTY echo round trip.

A real ``python -m serial_mcp`` subprocess serves MCP over stdio; the device is an AT-like responder
on a PTY master in a thread of this process (``AT\\r`` → ``\\r\\nOK\\r\\n``). Measured, each after a
warm-up, ``--calls`` times:

* ``transact(data="AT\\r", match="OK")`` over the stdio session,
* ``list_connections`` (a trivial tool) over the same session,
* the raw PTY round trip: write ``AT\\r`` to a second pair's slave fd, the responder answers, read
  back until ``OK`` — no MCP, no pump, no event loop.

Goal (issue): median transact ≤ 1.5 × (median trivial call + median raw PTY round trip).

    python bench/bench_transact.py [--calls 200] [--warmup 20] [--mode auto|legacy]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import select
import sys
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _pty_devices import (
    REPO,
    PtyPair,
    Responder,
    machine_note,
    median,
    monotonic,
    open_pty,
    percentile,
    print_table,
)

GOAL = 1.5


def raw_round_trips(pair: PtyPair, calls: int, warmup: int) -> list[float]:
    """Write ``AT\\r`` to the slave fd and read until ``OK\\r\\n``; blocking, no event loop."""
    fd = pair.slave
    out: list[float] = []
    for i in range(warmup + calls):
        t0 = monotonic()
        os.write(fd, b"AT\r")
        got = b""
        while not got.endswith(b"OK\r\n"):
            ready, _, _ = select.select([fd], [], [], 2.0)
            if not ready:
                raise TimeoutError(f"raw PTY: no reply (got {got!r})")
            got += os.read(fd, 4096)
        if i >= warmup:
            out.append(monotonic() - t0)
    return out


def _check(result: Any, what: str) -> None:
    if result.is_error:
        text = result.content[0].text if result.content else "?"
        raise RuntimeError(f"{what} failed: {text}")


async def stdio_round_trips(path: str, calls: int, warmup: int, mode: str) -> tuple[list[float], list[float]]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "serial_mcp"],
        cwd=str(REPO),
        env={"PYTHONPATH": str(REPO)},
    )
    async with Client(params, mode=mode, read_timeout_seconds=30) as client:
        opened = await client.call_tool("open", {"port": path})
        _check(opened, "open")
        conn_id = opened.structured_content["connection_id"]
        args = {"connection_id": conn_id, "data": "AT\r", "match": "OK", "timeout_ms": 2000}

        transact: list[float] = []
        trivial: list[float] = []
        # Interleaved, so drift in machine load hits both series alike.
        for i in range(warmup + calls):
            t0 = monotonic()
            r = await client.call_tool("transact", args)
            t1 = monotonic()
            _check(r, "transact")
            read = r.structured_content["read"]
            if read["stop_reason"] != "match":
                raise RuntimeError(f"transact did not match: {read}")
            t2 = monotonic()
            r = await client.call_tool("list_connections", {})
            t3 = monotonic()
            _check(r, "list_connections")
            if i >= warmup:
                transact.append(t1 - t0)
                trivial.append(t3 - t2)
        _check(await client.call_tool("close", {"connection_id": conn_id}), "close")
    return transact, trivial


def _ms(x: float) -> str:
    return f"{x * 1000:.3f}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=200, help="measured calls per series (default 200)")
    p.add_argument("--warmup", type=int, default=20, help="unmeasured calls first (default 20)")
    p.add_argument(
        "--mode",
        choices=("auto", "legacy"),
        default="auto",
        help="client protocol era: auto = 2026-07-28, legacy = 2025-11-25 (default auto)",
    )
    args = p.parse_args()

    served, raw_pair = open_pty(), open_pty()
    devices = [Responder(pair.master, f"device-{i}").start() for i, pair in enumerate((served, raw_pair))]
    try:
        raw = raw_round_trips(raw_pair, args.calls, args.warmup)
        transact, trivial = asyncio.run(stdio_round_trips(served.path, args.calls, args.warmup, args.mode))
    finally:
        for d in devices:
            d.stop()
        served.close()
        raw_pair.close()

    print(
        f"transact round trip: {args.calls} calls after {args.warmup} warm-up, stdio, mode={args.mode} — "
        f"{machine_note()}"
    )
    rows = [
        [name, _ms(median(xs)), _ms(percentile(xs, 90)), _ms(min(xs))]
        for name, xs in (
            ("transact AT\\r → OK (stdio)", transact),
            ("list_connections (stdio)", trivial),
            ("raw PTY round trip", raw),
        )
    ]
    print_table(["series", "median ms", "p90 ms", "min ms"], rows)
    budget = median(trivial) + median(raw)
    ratio = median(transact) / budget
    ratio90 = percentile(transact, 90) / (percentile(trivial, 90) + percentile(raw, 90))
    print(
        f"\ntransact / (trivial + raw PTY) = {ratio:.2f}× median, {ratio90:.2f}× p90  "
        f"(goal ≤ {GOAL}× on the median: {'met' if ratio <= GOAL else 'NOT met'})"
    )
    print(f"transact overhead beyond trivial + raw: {(median(transact) - budget) * 1000:.3f} ms (median)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
