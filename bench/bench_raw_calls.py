"""Per-call cost of the servers alone: transact and a trivial call through a raw JSON-RPC client.

``bench_transact.py`` times calls through the SDK's ``Client``, whose own work (its session, its
pydantic models, the output-schema check) is the same for every server and sits inside every
figure, so its ratios are closer to 1 than the servers' costs are. Here the client is the least any
client does: write one JSON line to the server's stdin, read lines from its stdout until the answer
with that id, ``json.loads`` it. serial-mcp, mcserial (the peer, in its own venv as
``bench_transact.py`` installs it) and the bare SDK server (``sdk_floor_server.py``) each get a PTY
with the AT responder; the calls interleave round by round, so the three share the same minutes.

    python bench/bench_raw_calls.py [--calls 300] [--warmup 30] [--peer auto|none]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

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
from bench_transact import GOAL_FLOOR, GOAL_PEER, PEER, dev_tty_alias, peer_command

HELLO = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "bench-raw", "version": "0"},
}


class RawClient:
    """One server over its stdio, spoken to in newline-delimited JSON-RPC and nothing more."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str | None = None) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd
        )
        self._id = 0
        self.request("initialize", HELLO)
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._id += 1
        self._send({"jsonrpc": "2.0", "id": self._id, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"{self.proc.args[0]} ended before answering {method}")
            doc: dict[str, Any] = json.loads(line)
            if doc.get("id") == self._id:
                if "error" in doc:
                    raise RuntimeError(f"{method}: {doc['error']}")
                return doc

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.request("tools/call", {"name": name, "arguments": arguments})["result"]
        if result.get("isError"):
            raise RuntimeError(f"{name} failed: {result.get('content')}")
        return result

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


class Contender:
    def __init__(
        self, client: RawClient, transact: tuple[str, dict[str, Any]], trivial: tuple[str, dict[str, Any]]
    ) -> None:
        self.client, self.transact_call, self.trivial_call = client, transact, trivial
        self.transact: list[float] = []
        self.trivial: list[float] = []

    def one(self, keep: bool) -> None:
        for (name, args), out in ((self.transact_call, self.transact), (self.trivial_call, self.trivial)):
            t0 = monotonic()
            result = self.client.call(name, args)
            t1 = monotonic()
            if name == "transact" and "OK" not in json.dumps(result):
                raise RuntimeError(f"transact got no OK: {result}")
            if keep:
                out.append(t1 - t0)


def ours(path: str) -> Contender:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    client = RawClient([sys.executable, "-m", "serial_mcp"], env, str(REPO))
    cid = client.call("open", {"port": path})["structuredContent"]["connection_id"]
    args = {"connection_id": cid, "data": "AT\r", "match": "OK", "timeout_ms": 2000}
    return Contender(client, ("transact", args), ("list_connections", {}))


def floor(path: str) -> Contender:
    script = str(Path(__file__).resolve().parent / "sdk_floor_server.py")
    client = RawClient([sys.executable, script], {"PATH": os.environ.get("PATH", "")})
    client.call("open", {"port": path})
    args = {"connection_id": "c1", "data": "AT\r", "match": "OK", "timeout_ms": 2000}
    return Contender(client, ("transact", args), ("list_connections", {}))


def peer(command: str, path: str) -> Contender:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "FASTMCP_LOG_LEVEL": "WARNING",
        "FASTMCP_SHOW_CLI_BANNER": "false",
    }
    client = RawClient([command], env)
    client.call("open_serial_port", {"port": path, "baudrate": 115200})
    args = {"port": path, "data": "AT\r", "response_terminator": "OK", "response_timeout": 2.0}
    return Contender(client, ("transact", args), ("configure_logging", {"level": "INFO"}))


def run_interleaved(contenders: dict[str, Contender], calls: int, warmup: int) -> None:
    """``warmup`` untimed then ``calls`` timed rounds, each contender once a round (the same minutes)."""
    for i in range(warmup + calls):
        for c in contenders.values():
            c.one(keep=i >= warmup)


def close_all(contenders: dict[str, Contender], devices: list[Responder], pairs: list[PtyPair]) -> None:
    for c in contenders.values():
        c.client.close()
    for d in devices:
        d.stop()
    for pair in pairs:
        pair.close()


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=300, help="timed rounds (default 300)")
    p.add_argument("--warmup", type=int, default=30, help="untimed rounds first (default 30)")
    p.add_argument("--peer", choices=("auto", "none"), default="auto", help=f"run {PEER} too (default auto)")
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "serial-mcp-bench"
    p.add_argument("--peer-venv", type=Path, default=cache / f"{PEER}-venv", help="the peer's own venv")
    args = p.parse_args()

    peer_cmd, why = (None, "--peer none") if args.peer == "none" else peer_command(args.peer_venv)
    pairs = [open_pty(), open_pty(), open_pty()]
    devices = [Responder(pair.master, f"device-{i}").start() for i, pair in enumerate(pairs)]
    contenders: dict[str, Contender] = {}
    try:
        with dev_tty_alias(pairs[2].path) as alias:
            if peer_cmd is not None and alias is None:
                peer_cmd, why = None, "no write access to /dev for its /dev/tty* name"
            contenders["serial-mcp"] = ours(pairs[0].path)
            contenders["bare SDK server"] = floor(pairs[1].path)
            if peer_cmd is not None and alias is not None:
                contenders[PEER] = peer(peer_cmd, alias)
            run_interleaved(contenders, args.calls, args.warmup)
    finally:
        close_all(contenders, devices, pairs)

    print(f"per call, raw JSON-RPC client over stdio, {args.calls} rounds — {machine_note()}")
    rows = []
    for name, c in contenders.items():
        for what, xs in (("transact", c.transact), ("trivial", c.trivial)):
            rows.append([f"{name} {what}", _ms(median(xs)), _ms(percentile(xs, 90)), _ms(min(xs))])
    print_table(["series", "median ms", "p90 ms", "min ms"], rows)
    mine = median(contenders["serial-mcp"].transact)
    base = median(contenders["bare SDK server"].transact)
    print(
        f"\ntransact / bare SDK server's = {mine / base:.2f}× "
        f"(goal ≤ {GOAL_FLOOR}×: {'met' if mine / base <= GOAL_FLOOR else 'NOT met'})"
    )
    if PEER in contenders:
        vs = mine / median(contenders[PEER].transact)
        verdict = "met" if vs <= GOAL_PEER else "NOT met"
        print(f"transact / {PEER}'s = {vs:.2f}× (goal ≤ {GOAL_PEER}×: {verdict})")
        print(
            f"trivial call / {PEER}'s = "
            f"{median(contenders['serial-mcp'].trivial) / median(contenders[PEER].trivial):.2f}×"
        )
    else:
        print(f"{PEER}: skipped — {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
