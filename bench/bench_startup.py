"""Start-up: from launch to the first ``tools/list`` answer, serial-mcp against a bare SDK server.

Each round launches both servers (in alternating order, so drift in the machine's load hits both
alike), sends ``initialize``, ``notifications/initialized`` and ``tools/list`` at once, and times the
arrival of the ``tools/list`` answer. Also prints serial-mcp's RSS once idle with 4 open ports
(``sim://echo``), for the issue's "idle RSS with 4 open ports ≤ 80 MiB".

    python bench/bench_startup.py            # --rounds 15
    python bench/bench_startup.py --old DIR  # also another checkout's serial-mcp, in the same rounds

With ``--old``, each serial-mcp gets a cache directory of its own (``XDG_CACHE_HOME``): the kept tool
schemas (tool_cache) are fingerprinted by the code, and two checkouts sharing one file would make
every launch of either a miss.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _pty_devices import machine_note, median, percentile, print_table, rss_kib

HERE = Path(__file__).resolve().parent
HELLO = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
]
SERVERS = {
    "serial-mcp": [sys.executable, "-m", "serial_mcp"],
    "bare SDK server": [sys.executable, str(HERE / "sdk_floor_server.py")],
}


def _request(proc: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


def _answer(proc: subprocess.Popen[bytes], rid: int) -> dict[str, object]:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("the server ended before answering")
        doc = json.loads(line)
        if doc.get("id") == rid:
            return doc  # type: ignore[no-any-return]


Launch = tuple[list[str], dict[str, str], str | None]  # argv, environment over ours, cwd


def time_to_tools_list(
    argv: list[str], extra_env: dict[str, str] | None = None, cwd: str | None = None
) -> float:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "0", **(extra_env or {})}
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env, cwd=cwd)
    try:
        for message in HELLO:
            _request(proc, message)
        _answer(proc, 2)
        return time.perf_counter() - t0
    finally:
        proc.kill()
        _, _, usage = os.wait4(proc.pid, 0)  # the CPU it used up to tools/list (and the kill)
        proc.returncode = -9
        CPU_USED.append(usage.ru_utime + usage.ru_stime)


CPU_USED: list[float] = []  # each launch's user + system seconds, in launch order


def idle_rss_with_ports(ports: int) -> int:
    proc = subprocess.Popen(SERVERS["serial-mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    try:
        for message in HELLO[:2]:
            _request(proc, message)
        _answer(proc, 1)
        for i in range(ports):
            _request(proc, {"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call",
                            "params": {"name": "open", "arguments": {"port": "sim://echo"}}})
            _answer(proc, 10 + i)
        time.sleep(1.0)  # let the pumps settle into their idle wait
        return rss_kib(proc.pid)
    finally:
        proc.kill()
        proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--old", type=Path, help="another checkout whose serial-mcp runs in the same rounds")
    args = ap.parse_args()
    servers: dict[str, Launch] = {name: (argv, {}, None) for name, argv in SERVERS.items()}
    if args.old is not None:
        caches = Path(tempfile.mkdtemp(prefix="bench-startup-"))
        old = str(args.old.resolve())
        servers["serial-mcp"] = (SERVERS["serial-mcp"], {"XDG_CACHE_HOME": str(caches / "new")}, None)
        servers["serial-mcp (old)"] = (
            SERVERS["serial-mcp"], {"XDG_CACHE_HOME": str(caches / "old"), "PYTHONPATH": old}, old
        )
    samples: dict[str, list[float]] = {name: [] for name in servers}
    cpu: dict[str, list[float]] = {name: [] for name in servers}
    for argv, env, cwd in servers.values():  # warm the page cache, the bytecode and the kept schemas
        time_to_tools_list(argv, env, cwd)
    for r in range(args.rounds):
        order = list(servers.items()) if r % 2 == 0 else list(servers.items())[::-1]
        for name, (argv, env, cwd) in order:
            samples[name].append(time_to_tools_list(argv, env, cwd))
            cpu[name].append(CPU_USED[-1])
    ours, bare = median(samples["serial-mcp"]), median(samples["bare SDK server"])
    rows = [
        [name, f"{median(v) * 1e3:.0f}", f"{percentile(v, 90) * 1e3:.0f}", f"{median(cpu[name]) * 1e3:.0f}"]
        for name, v in samples.items()
    ]
    print(machine_note())
    print_table(["server", "launch → tools/list p50 ms", "p90 ms", "CPU p50 ms"], rows)
    cpu_ratio = median(cpu["serial-mcp"]) / median(cpu["bare SDK server"])
    print(f"CPU to tools/list, serial-mcp / bare SDK server: {cpu_ratio:.2f}x")
    print(f"ratio serial-mcp / bare SDK server: {ours / bare:.2f}x  (goal <= 1.15x)")
    if "serial-mcp (old)" in samples:
        old_ms = median(samples["serial-mcp (old)"])
        print(f"ratio serial-mcp (old) / bare SDK server: {old_ms / bare:.2f}x; "
              f"new / old: {ours / old_ms:.3f}")
        old_cpu = median(cpu["serial-mcp (old)"])
        print(f"CPU: old / bare SDK server {old_cpu / median(cpu['bare SDK server']):.2f}x; "
              f"new / old {median(cpu['serial-mcp']) / old_cpu:.3f}")
    rss = idle_rss_with_ports(4)
    print(f"idle RSS with 4 open ports: {rss / 1024:.1f} MiB  (goal <= 80 MiB)")


if __name__ == "__main__":
    main()
