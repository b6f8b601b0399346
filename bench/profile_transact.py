"""Where one ``transact`` call's time goes inside the server (cProfile of the event-loop thread).

Starts ``bench/_profiled_server.py`` (``python -m serial_mcp`` with a signal-driven profiler) over
stdio through the SDK client, opens a PTY whose far end is the AT responder, warms up, then
profiles ``--calls`` transacts (or ``--tool list_connections``) and prints the top functions by
own time and by cumulative time, restricted to the server's process and its loop thread.
Profiling slows the calls; read the shares, not the absolute times.

    python bench/profile_transact.py [--calls 300] [--warmup 30] [--tool transact] [--top 40]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pstats
import signal
import sys
import tempfile
import time
from pathlib import Path

from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _pty_devices import REPO, Responder, find_child, open_pty


async def run(args: argparse.Namespace, out: str) -> None:
    pair = open_pty()
    responder = Responder(pair.master).start()
    script = str(Path(__file__).resolve().parent / "_profiled_server.py")
    params = StdioServerParameters(
        command=sys.executable, args=[script, out], cwd=str(REPO), env={"PYTHONPATH": str(REPO)}
    )
    try:
        async with Client(params, read_timeout_seconds=30) as client:
            opened = await client.call_tool("open", {"port": pair.path})
            conn = opened.structured_content["connection_id"]
            if args.tool == "transact":
                args_ = {"connection_id": conn, "data": "AT\r", "match": "OK", "timeout_ms": 2000}
                call = ("transact", args_)
            else:
                call = ("list_connections", {})
            for _ in range(args.warmup):
                await client.call_tool(*call)
            pid = find_child(os.path.basename(script))
            os.kill(pid, signal.SIGUSR1)
            await asyncio.sleep(0.05)
            t0 = time.perf_counter()
            for _ in range(args.calls):
                await client.call_tool(*call)
            took = time.perf_counter() - t0
            os.kill(pid, signal.SIGUSR2)
            for _ in range(100):
                await asyncio.sleep(0.05)
                if os.path.exists(out) and os.path.getsize(out) > 0:
                    break
            await client.call_tool("close", {"connection_id": conn})
        print(f"{args.calls} × {args.tool}: {took / args.calls * 1e3:.3f} ms per call under the profiler")
    finally:
        responder.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--tool", choices=("transact", "list_connections"), default="transact")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--save", help="keep the raw stats at this path")
    args = ap.parse_args()
    out = args.save or os.path.join(tempfile.mkdtemp(), "server.prof")
    asyncio.run(run(args, out))
    stats = pstats.Stats(out)
    stats.strip_dirs()
    for key in ("tottime", "cumulative"):
        print(f"\n--- by {key} (per call: divide by {args.calls}) ---")
        stats.sort_stats(key).print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
