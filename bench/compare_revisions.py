"""Before/after: the RX ingest, multi-port and transact benches for two revisions, in one run.

Each revision runs from its own checkout (its own ``bench/`` script, its own ``serial_mcp`` on
``PYTHONPATH``, so the server a bench launches with ``python -m serial_mcp`` is that revision's too).
The two alternate (old, new, then new, old, …) for ``--rounds`` rounds, so the machine's load —
2 shared cores here — drifts over both alike; the table gives each figure's median per revision and
new ÷ old. A revision given as a commit gets a temporary detached worktree (removed at the end); a
directory is used as it is.

    python bench/compare_revisions.py                          # --old 9e543fc --new . --rounds 3
    python bench/compare_revisions.py --old 9e543fc --new HEAD --benches transact --rounds 5

The figures are the benches' own (see bench/README.md): RX ingest MB/s and CPU ms/MiB of the pump
→ ring; the multi-port server's µs of CPU per received chunk per scenario; transact's median round
trip over stdio, its trivial call's, and mcserial's transact when the peer is installed.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

Figures = dict[str, float]


def _rows(text: str) -> list[list[str]]:
    """The rows of every table ``print_table`` printed (columns split on two or more spaces)."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.splitlines() if re.search(r"\S\s{2,}\S", line)]


def _number(cell: str) -> float | None:
    m = re.match(r"-?\d+(?:\.\d+)?", cell.strip())
    return float(m.group()) if m else None


def parse_rx_ingest(text: str) -> Figures:
    out: Figures = {}
    for row in _rows(text):
        if row[0] == "serial-mcp pump → ring" and len(row) >= 3:
            out["rx ingest MB/s"] = _number(row[1]) or 0.0
            out["rx ingest CPU ms/MiB"] = _number(row[2]) or 0.0
        if row[0] == "pyserial read(in_waiting)" and len(row) >= 3:
            out["pyserial MB/s (same run)"] = _number(row[1]) or 0.0
    return out


def parse_multiport(text: str) -> Figures:
    out: Figures = {}
    for row in _rows(text):
        if len(row) >= 5 and re.fullmatch(r"\d+×\d+ B @ .*", row[0]):
            value = _number(row[4])
            if value is not None:
                out[f"multiport {row[0]} µs/chunk"] = value
                cpu = _number(row[2])
                if cpu is not None:
                    out[f"multiport {row[0]} CPU %"] = cpu
    return out


_TRANSACT_SERIES = {
    "transact AT\\r → OK (stdio)": "transact ms",
    "list_connections (stdio)": "trivial call ms",
    "mcserial transact (stdio)": "mcserial transact ms",
    "engine transact, in process (Python API)": "engine transact in process ms",
}


def parse_transact(text: str) -> Figures:
    out: Figures = {}
    for row in _rows(text):
        name = _TRANSACT_SERIES.get(row[0])
        if name and len(row) >= 2 and (value := _number(row[1])) is not None:
            out[name] = value
    if "transact ms" in out and "mcserial transact ms" in out:
        out["transact / mcserial (×)"] = out["transact ms"] / out["mcserial transact ms"]
    return out


BENCHES: dict[str, tuple[str, Callable[[str], Figures]]] = {
    "rx_ingest": ("bench_rx_ingest.py", parse_rx_ingest),
    "multiport": ("bench_multiport.py", parse_multiport),
    "transact": ("bench_transact.py", parse_transact),
}


def checkout(rev: str, keep: list[Path]) -> Path:
    """A directory holding revision ``rev``: itself if it is one, else a temporary worktree."""
    if Path(rev).is_dir():
        return Path(rev).resolve()
    tmp = Path(tempfile.mkdtemp(prefix="serial-mcp-rev-"))
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tmp), rev], check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    keep.append(tmp)
    return tmp


def run_bench(tree: Path, script: str, extra: list[str]) -> str:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run([sys.executable, str(tree / "bench" / script), *extra], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"{script} in {tree} failed:\n{proc.stderr[-2000:]}")
    return proc.stdout


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--old", default="9e543fc", help="commit or directory (default 9e543fc)")
    p.add_argument("--new", default=str(REPO), help="commit or directory (default: this checkout)")
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    p.add_argument("--benches", default=",".join(BENCHES), help="comma list of " + ", ".join(BENCHES))
    p.add_argument("--rx-args", default="--mib 16 --repeat 3", help="arguments for bench_rx_ingest.py")
    p.add_argument("--multiport-args", default="--scenarios 32x115,8x10000 --seconds 5",
                   help="arguments for bench_multiport.py")  # fmt: skip
    p.add_argument("--transact-args", default="--calls 200 --floor none",
                   help="arguments for bench_transact.py")  # fmt: skip
    p.add_argument("--show", action="store_true", help="print each bench's own output too")
    args = p.parse_args()
    extra = {"rx_ingest": args.rx_args, "multiport": args.multiport_args, "transact": args.transact_args}
    created: list[Path] = []
    try:
        trees = {"old": checkout(args.old, created), "new": checkout(args.new, created)}
        samples: dict[str, dict[str, list[float]]] = {"old": {}, "new": {}}
        for r in range(args.rounds):
            for bench in args.benches.split(","):
                script, parse = BENCHES[bench]
                order = ["old", "new"] if r % 2 == 0 else ["new", "old"]
                for which in order:
                    text = run_bench(trees[which], script, extra[bench].split())
                    if args.show:
                        print(f"--- {bench}, {which}, round {r + 1}\n{text}")
                    for name, value in parse(text).items():
                        samples[which].setdefault(name, []).append(value)
                    print(f"round {r + 1}/{args.rounds}: {bench} {which} done", file=sys.stderr)
        load = os.getloadavg()
        print(f"old = {args.old} ({trees['old']}), new = {args.new} ({trees['new']})")
        print(f"{args.rounds} alternating rounds, medians; python {sys.version.split()[0]}, "
              f"{os.cpu_count()} CPUs, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")  # fmt: skip
        names = list(dict.fromkeys([*samples["old"], *samples["new"]]))
        width = max(len(n) for n in names) if names else 10
        print(f"{'figure':<{width}}  {'old':>10}  {'new':>10}  {'new/old':>8}  runs old | new")
        for name in names:
            old, new = samples["old"].get(name, []), samples["new"].get(name, [])
            mo = statistics.median(old) if old else float("nan")
            mn = statistics.median(new) if new else float("nan")
            ratio = mn / mo if old and new and mo else float("nan")
            runs = " ".join(f"{v:.3g}" for v in old) + " | " + " ".join(f"{v:.3g}" for v in new)
            print(f"{name:<{width}}  {mo:>10.3f}  {mn:>10.3f}  {ratio:>8.2f}  {runs}")
    finally:
        for tmp in created:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tmp)], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
