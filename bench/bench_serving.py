"""The serving path, decided by figures (issue 41.5): serial-mcp's own stdio transport against the
same server served by the SDK's public ``MCPServer.run_stdio_async``, per call and at start-up.

Four servers, in one run, each on a PTY with the AT responder:

* ``serial-mcp``: ``python -m serial_mcp`` as shipped (mcp/stdio_serve.py: screened lines, the
  in-flight bound, the SDK's dual-era loop without its relay task);
* ``serial-mcp, SDK path``: the very same process and server (kept tool schemas, the argument guard,
  the per-session caller, the idle tracing middleware dropped), only served by the SDK's public
  ``run_stdio_async`` instead — without the line screen and the in-flight bound, which would have to
  come back as middleware, so its figures are a lower bound for the SDK path;
* ``bare SDK server`` (``sdk_floor_server.py``) and ``mcserial`` (the peer, as bench_transact.py
  installs it), for issue 40's ratios: write-and-wait ≤ 0.5× mcserial's, start-up ≤ 1.1× the bare
  SDK server's.

Calls go through the raw JSON-RPC client of bench_raw_calls.py, round by round interleaved; launches
(to the first ``tools/list`` answer, bench_startup.py's clock) alternate their order every round.

    python bench/bench_serving.py [--calls 300] [--warmup 30] [--launches 15] [--peer auto|none]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _pty_devices import REPO, Responder, machine_note, median, open_pty, percentile, print_table
from bench_raw_calls import Contender, RawClient, _ms, close_all, floor, ours, peer, run_interleaved
from bench_startup import SERVERS, time_to_tools_list
from bench_transact import PEER, dev_tty_alias, peer_command

SDK_PATH = "serial-mcp, SDK path"
SDK_PATH_ARGV = [sys.executable, str(Path(__file__).resolve()), "--serve-sdk-path"]
GOAL_PEER = 0.5  # issue 40: write-and-wait ÷ mcserial's
GOAL_STARTUP = 1.1  # issue 40: launch → first tools/list ÷ the bare SDK server's


def serve_sdk_path() -> int:
    """``python -m serial_mcp`` with one change: stdio served by ``MCPServer.run_stdio_async``."""
    from serial_mcp import cli
    from serial_mcp.mcp import stdio_serve

    async def public(server: Any) -> None:
        await server.run_stdio_async()

    stdio_serve.run_stdio = public  # type: ignore[assignment]  # cli.serve imports it at call time
    return cli.main([])


def sdk_path(path: str) -> Contender:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    client = RawClient(SDK_PATH_ARGV, env, str(REPO))
    cid = client.call("open", {"port": path})["structuredContent"]["connection_id"]
    args = {"connection_id": cid, "data": "AT\r", "match": "OK", "timeout_ms": 2000}
    return Contender(client, ("transact", args), ("list_connections", {}))


def per_call(calls: int, warmup: int, peer_cmd: str | None) -> dict[str, Contender]:
    pairs = [open_pty() for _ in range(4)]
    devices = [Responder(pair.master, f"device-{i}").start() for i, pair in enumerate(pairs)]
    contenders: dict[str, Contender] = {}
    try:
        with dev_tty_alias(pairs[3].path) as alias:
            contenders["serial-mcp"] = ours(pairs[0].path)
            contenders[SDK_PATH] = sdk_path(pairs[1].path)
            contenders["bare SDK server"] = floor(pairs[2].path)
            if peer_cmd is not None and alias is not None:
                contenders[PEER] = peer(peer_cmd, alias)
            run_interleaved(contenders, calls, warmup)
    finally:
        close_all(contenders, devices, pairs)
    return contenders


def launches(rounds: int) -> dict[str, list[float]]:
    servers = {**SERVERS, SDK_PATH: SDK_PATH_ARGV}
    env = {"PYTHONPATH": str(REPO)}
    for argv in servers.values():  # warm the page cache, the bytecode and the kept schemas
        time_to_tools_list(argv, env, str(REPO))
    samples: dict[str, list[float]] = {name: [] for name in servers}
    for r in range(rounds):
        order = list(servers.items()) if r % 2 == 0 else list(servers.items())[::-1]
        for name, argv in order:
            samples[name].append(time_to_tools_list(argv, env, str(REPO)))
    return samples


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=300, help="timed rounds (default 300)")
    p.add_argument("--warmup", type=int, default=30, help="untimed rounds first (default 30)")
    p.add_argument("--launches", type=int, default=15, help="start-up rounds (default 15)")
    p.add_argument("--peer", choices=("auto", "none"), default="auto", help=f"run {PEER} too (default auto)")
    p.add_argument("--serve-sdk-path", action="store_true", help=argparse.SUPPRESS)
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "serial-mcp-bench"
    p.add_argument("--peer-venv", type=Path, default=cache / f"{PEER}-venv", help="the peer's own venv")
    args = p.parse_args()
    if args.serve_sdk_path:
        return serve_sdk_path()

    peer_cmd, why = (None, "--peer none") if args.peer == "none" else peer_command(args.peer_venv)
    contenders = per_call(args.calls, args.warmup, peer_cmd)
    starts = launches(args.launches)

    print(f"serving path, {args.calls} call rounds, {args.launches} launch rounds — {machine_note()}")
    rows = []
    for name, c in contenders.items():
        for what, xs in (("transact", c.transact), ("trivial", c.trivial)):
            rows.append([f"{name} {what}", _ms(median(xs)), _ms(percentile(xs, 90))])
    for name, xs in starts.items():
        rows.append([f"{name} launch → tools/list", _ms(median(xs)), _ms(percentile(xs, 90))])
    print_table(["series", "median ms", "p90 ms"], rows)
    bare_start = median(starts["bare SDK server"])
    bare_trivial = median(contenders["bare SDK server"].trivial)
    for name in ("serial-mcp", SDK_PATH):
        c = contenders[name]
        start = median(starts[name]) / bare_start
        line = f"{name}: start-up / bare SDK's = {start:.2f}× (goal ≤ {GOAL_STARTUP}×)"
        if PEER in contenders:
            vs = median(c.transact) / median(contenders[PEER].transact)
            line += f"; transact / {PEER}'s = {vs:.2f}× (goal ≤ {GOAL_PEER}×)"
        line += f"; trivial / bare SDK's = {median(c.trivial) / bare_trivial:.2f}×"
        print(line)
    if PEER not in contenders:
        print(f"{PEER}: skipped — {why or 'no /dev/tty* alias'}")
    ours_c, sdk_c = contenders["serial-mcp"], contenders[SDK_PATH]
    print(
        f"SDK path − ours per call: transact {_ms(median(sdk_c.transact) - median(ours_c.transact))} ms, "
        f"trivial {_ms(median(sdk_c.trivial) - median(ours_c.trivial))} ms; start-up "
        f"{_ms(median(starts[SDK_PATH]) - median(starts['serial-mcp']))} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
