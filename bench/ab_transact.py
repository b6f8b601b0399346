"""Two checkouts' servers side by side in one loop of calls: ``transact`` and a trivial call, A/B.

``compare_revisions.py`` runs a revision's whole bench, then the other's: on a shared machine the
load drifts between runs (2-3×), and a 5 % change drowns. Here both servers (``python -m
serial_mcp`` from each checkout, over stdio through the SDK client, each with its own AT responder
on a PTY) are called alternately, call by call, in one loop, so the drift hits both alike. Prints
each one's medians and new ÷ old, and each server's own CPU time (user + system, all its threads,
from ``/proc/<pid>/task/*/schedstat``) per pair of calls, per round: on a loaded machine the steadier figure.

    python bench/ab_transact.py --old /path/to/old/checkout [--new .] [--calls 400] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _pty_devices import (
    REPO,
    Responder,
    machine_note,
    median,
    open_pty,
    percentile,
    print_table,
)
from bench_transact import Series, _check


@contextlib.asynccontextmanager
async def server(checkout: Path) -> AsyncIterator[Series]:
    pair = open_pty()
    responder = Responder(pair.master).start()
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "serial_mcp"], cwd=str(checkout),
        env={"PYTHONPATH": str(checkout)},
    )
    try:
        async with Client(params, read_timeout_seconds=30) as client:
            opened = await client.call_tool("open", {"port": pair.path})
            _check(opened, "open")
            conn = opened.structured_content["connection_id"]
            args = {"connection_id": conn, "data": "AT\r", "match": "OK", "timeout_ms": 2000}
            yield Series(client, ("transact", args), ("list_connections", {}))
            await client.call_tool("close", {"connection_id": conn})
    finally:
        responder.stop()


def cpu_seconds(pid: int) -> float:
    """Time on a CPU of every thread of ``pid`` (``schedstat``: nanoseconds, where ``stat``'s clock
    ticks of 10 ms would be too coarse for a round of a few hundred calls)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # a thread that just ended
            total += int((task / "schedstat").read_text().split()[0])
    return total / 1e9


def server_pid(checkout: Path) -> int:
    """The pid of this process's child serving ``-m serial_mcp`` from ``checkout`` (its cwd)."""
    me = str(os.getpid())
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes()
            cwd = os.readlink(entry / "cwd")
        except (OSError, ValueError):
            continue
        if stat.rpartition(")")[2].split()[1] == me and b"serial_mcp" in cmd and Path(cwd) == checkout:
            return int(entry.name)
    raise RuntimeError(f"no server child running in {checkout}")


async def run(
    old: Path, new: Path, calls: int, warmup: int, rounds: int
) -> tuple[Series, Series, list[tuple[float, float]]]:
    cpu: list[tuple[float, float]] = []  # per round: (old, new) server CPU seconds per pair of calls
    async with server(old) as a, server(new) as b:
        pids = (server_pid(old), server_pid(new))
        for _ in range(warmup):
            await a.one(False)
            await b.one(False)
        per_round = max(1, calls // rounds)
        for _ in range(rounds):
            before = [cpu_seconds(p) for p in pids]
            for i in range(per_round):
                for series in (a, b) if i % 2 else (b, a):  # who goes first alternates too
                    await series.one(True)
            after = [cpu_seconds(p) for p in pids]
            cpu.append(((after[0] - before[0]) / per_round, (after[1] - before[1]) / per_round))
        return a, b, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", type=Path, required=True, help="the other checkout (its serial_mcp is served)")
    ap.add_argument("--new", type=Path, default=REPO)
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--warmup", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    if args.old.resolve() == args.new.resolve():
        ap.error("--old and --new must be different directories (an A/A check: a second checkout)")
    a, b, cpu = asyncio.run(run(args.old.resolve(), args.new.resolve(), args.calls, args.warmup, args.rounds))
    ms = 1e3
    rows = []
    for name in ("transact", "trivial"):
        old_s, new_s = getattr(a, name), getattr(b, name)
        rows.append([
            name, f"{median(old_s) * ms:.3f}", f"{median(new_s) * ms:.3f}",
            f"{median(new_s) / median(old_s):.3f}",
            f"{percentile(old_s, 90) * ms:.3f} / {percentile(new_s, 90) * ms:.3f}",
        ])  # fmt: skip
    extra_old = median(a.transact) - median(a.trivial)
    extra_new = median(b.transact) - median(b.trivial)
    rows.append(["transact − trivial", f"{extra_old * ms:.3f}", f"{extra_new * ms:.3f}", "", ""])
    old_cpu, new_cpu = [c[0] for c in cpu], [c[1] for c in cpu]
    rows.append([
        "server CPU / (transact + trivial)", f"{median(old_cpu) * ms:.3f}", f"{median(new_cpu) * ms:.3f}",
        f"{median([n / o for o, n in cpu if o]):.3f}",
        "rounds: " + " ".join(f"{n / o:.2f}" for o, n in cpu if o),
    ])  # fmt: skip
    print(machine_note())
    print(f"old = {args.old}, new = {args.new}; {args.calls} calls each, interleaved")
    print_table(["series (ms)", "old median", "new median", "new/old", "p90 old / new"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
