"""``transact`` round trip over stdio vs a trivial tool call, vs mcserial's, and the raw PTY round trip.

A real ``python -m serial_mcp`` subprocess serves MCP over stdio; the device is an AT-like responder
on a PTY master in a thread of this process (``AT\\r`` → ``\\r\\nOK\\r\\n``). Measured, each after a
warm-up, ``--calls`` times, all series interleaved call by call:

* ``transact(data="AT\\r", match="OK")`` over the stdio session,
* ``list_connections`` (a trivial tool) over the same session,
* the peer, mcserial (``pip install mcserial``, in its own venv under the cache directory, made on
  the first run): its ``transact(data="AT\\r", response_terminator="OK")`` and its trivial
  ``configure_logging``, on a PTY of its own (mcserial only opens ``/dev/tty*`` names, so its
  port is a symlink in ``/dev``; without write access to ``/dev`` the peer is skipped, said so),
* the SDK's floor (``--floor auto``): ``bench/sdk_floor_server.py``, a bare SDK server whose
  ``transact`` is an ``os.write`` and an event-loop read of its own PTY, and its trivial
  ``list_connections`` — what any server built on the SDK pays on this machine,
* the raw PTY round trip: write ``AT\\r`` to a second pair's slave fd, the responder answers, read
  back until ``OK`` — no MCP, no pump, no event loop.
* in process (``_transact_probe.py``, a subprocess fed one request per sample, so its samples
  interleave with the calls above): the engine's ``transact`` through the Python API, a bare reader
  thread waking an event loop (the least a pump design pays for the device round trip), and the
  loop reading the port itself. From these medians the script splits transact's time beyond the
  trivial call into the device round trip, the engine's own work, and the rest (MCP at both ends).

Goals (DEVELOPERS.md, which retired the old "≤ 1.15 × our own trivial call"): median transact
≤ 0.6 × the median mcserial transact, and no slower than the bare SDK server's (the floor). The
ratio to our own trivial call is still printed, with the split of the time beyond it.

    python bench/bench_transact.py [--calls 200] [--warmup 20] [--mode auto|legacy] [--peer auto|none]
                                   [--floor auto|none]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import select
import subprocess
import sys
import venv
from collections.abc import AsyncIterator
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

GOAL_PEER = 0.6  # our transact / mcserial's transact
GOAL_FLOOR = 1.0  # our transact / the bare SDK server's transact
PEER = "mcserial"


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


def peer_command(venv_dir: Path) -> tuple[str | None, str]:
    """The peer's server command, installing it into its own venv on the first run; or None and why."""
    exe = venv_dir / "bin" / PEER
    if not exe.exists():
        print(f"installing {PEER} into {venv_dir} (first run) ...", file=sys.stderr)
        try:
            venv.create(venv_dir, with_pip=True, clear=True)
            subprocess.run(
                [str(venv_dir / "bin" / "python"), "-m", "pip", "install", "-q", PEER],
                check=True,
                stdout=subprocess.DEVNULL,
                timeout=600,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return None, f"{PEER} could not be installed ({exc})"
    return (str(exe), "") if exe.exists() else (None, f"{PEER} has no {exe}")


@contextlib.contextmanager
def dev_tty_alias(path: str) -> Any:
    """A ``/dev/tty…`` name for ``path`` (mcserial refuses ``/dev/pts/N``), or None without /dev access."""
    alias = Path(f"/dev/ttySMCPBENCH{os.getpid()}")
    try:
        alias.symlink_to(path)
    except OSError:
        yield None
        return
    try:
        yield str(alias)
    finally:
        alias.unlink(missing_ok=True)


class Series:
    """One server's two calls (its transact, its trivial tool), each a list of seconds."""

    def __init__(
        self, client: Client, transact: tuple[str, dict[str, Any]], trivial: tuple[str, dict[str, Any]]
    ) -> None:
        self.client, self.transact_call, self.trivial_call = client, transact, trivial
        self.transact: list[float] = []
        self.trivial: list[float] = []

    async def one(self, keep: bool) -> None:
        for (name, args), out in ((self.transact_call, self.transact), (self.trivial_call, self.trivial)):
            t0 = monotonic()
            r = await self.client.call_tool(name, args)
            t1 = monotonic()
            _check(r, name)
            if name == "transact":
                _check_reply(r)
            if keep:
                out.append(t1 - t0)


def _check_reply(r: Any) -> None:
    sc = r.structured_content or {}
    if "bytes_written" in sc:  # the SDK floor's
        if "OK" not in sc.get("data", ""):
            raise RuntimeError(f"the SDK floor's transact did not match: {sc}")
    elif "read" in sc:  # ours
        if sc["read"]["stop_reason"] != "match":
            raise RuntimeError(f"transact did not match: {sc['read']}")
    elif not (sc.get("success") and "OK" in sc.get("response", "")):  # the peer's
        raise RuntimeError(f"{PEER} transact failed: {sc}")


@contextlib.asynccontextmanager
async def ours(path: str, mode: str) -> AsyncIterator[Series]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "serial_mcp"], cwd=str(REPO), env={"PYTHONPATH": str(REPO)}
    )
    async with Client(params, mode=mode, read_timeout_seconds=30) as client:
        opened = await client.call_tool("open", {"port": path})
        _check(opened, "open")
        conn_id = opened.structured_content["connection_id"]
        args = {"connection_id": conn_id, "data": "AT\r", "match": "OK", "timeout_ms": 2000}
        yield Series(client, ("transact", args), ("list_connections", {}))
        _check(await client.call_tool("close", {"connection_id": conn_id}), "close")


@contextlib.asynccontextmanager
async def sdk_floor(path: str, mode: str) -> AsyncIterator[Series]:
    script = str(Path(__file__).resolve().parent / "sdk_floor_server.py")
    env = {"PATH": os.environ.get("PATH", "")}
    params = StdioServerParameters(command=sys.executable, args=[script], env=env)
    async with Client(params, mode=mode, read_timeout_seconds=30) as client:
        _check(await client.call_tool("open", {"port": path}), "floor open")
        args = {"connection_id": "c1", "data": "AT\r", "match": "OK", "timeout_ms": 2000}
        yield Series(client, ("transact", args), ("list_connections", {}))
        await client.call_tool("close", {"connection_id": "c1"})


@contextlib.asynccontextmanager
async def peer(command: str, path: str, mode: str) -> AsyncIterator[Series]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "FASTMCP_LOG_LEVEL": "WARNING",
        "FASTMCP_SHOW_CLI_BANNER": "false",
    }
    params = StdioServerParameters(command=command, args=[], env=env)
    async with Client(params, mode=mode, read_timeout_seconds=30) as client:
        _check(await client.call_tool("open_serial_port", {"port": path, "baudrate": 115200}), "peer open")
        args = {"port": path, "data": "AT\r", "response_terminator": "OK", "response_timeout": 2.0}
        yield Series(client, ("transact", args), ("configure_logging", {"level": "INFO"}))
        await client.call_tool("close_serial_port", {"port": path})


class Probe:
    """``_transact_probe.py`` in its own process: the in-process parts of the round trip, a sample
    per request, interleaved with the stdio series."""

    KINDS = ("engine", "chain", "direct")

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.samples: dict[str, list[float]] = {k: [] for k in self.KINDS}

    async def one(self, keep: bool) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        for kind in self.KINDS:
            self.proc.stdin.write(f"{kind}\n".encode())
            await self.proc.stdin.drain()
            took = float((await self.proc.stdout.readline()).decode())
            if keep:
                self.samples[kind].append(took)


@contextlib.asynccontextmanager
async def probe(paths: tuple[str, str, str]) -> AsyncIterator[Probe]:
    script = str(Path(__file__).resolve().parent / "_transact_probe.py")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, script, *paths, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stdin is not None
    if (await proc.stdout.readline()).strip() != b"ready":
        raise RuntimeError("the in-process probe did not start (see its stderr)")
    try:
        yield Probe(proc)
    finally:
        proc.stdin.close()
        await proc.wait()


async def stdio_round_trips(
    path: str,
    peer_path: str | None,
    peer_cmd: str | None,
    floor_path: str | None,
    probe_paths: tuple[str, str, str],
    calls: int,
    warmup: int,
    mode: str,
) -> tuple[Series, Series | None, Series | None, Probe]:
    async with contextlib.AsyncExitStack() as stack:
        mine = await stack.enter_async_context(ours(path, mode))
        other = floor = None
        if peer_cmd is not None and peer_path is not None:
            other = await stack.enter_async_context(peer(peer_cmd, peer_path, mode))
        if floor_path is not None:
            floor = await stack.enter_async_context(sdk_floor(floor_path, mode))
        parts = await stack.enter_async_context(probe(probe_paths))
        # Interleaved call by call, so drift in machine load hits every series alike.
        for i in range(warmup + calls):
            for series in (mine, other, floor, parts):
                if series is not None:
                    await series.one(i >= warmup)
        return mine, other, floor, parts


def _ms(x: float) -> str:
    return f"{x * 1000:.3f}"


def print_split(mine: Series, parts: Probe) -> None:
    """Where transact's time beyond the trivial call goes, from the medians of this run."""
    beyond = median(mine.transact) - median(mine.trivial)
    engine, chain, direct = (median(parts.samples[k]) for k in Probe.KINDS)
    rows = [
        [
            "the device round trip through a bare reader thread",
            _ms(chain),
            f"the loop reading the port itself: {_ms(direct)} ms",
        ],
        [
            "the engine's own work (in process, minus the line above)",
            _ms(engine - chain),
            "pump, ring, cursor, matching, the typed result",
        ],
        [
            "the rest: MCP at both ends, transact's arguments and result",
            _ms(beyond - engine),
            "beyond the trivial call's; and the engine's extra inside the server",
        ],
    ]
    print(f"\nsplit of the {_ms(beyond)} ms beyond the trivial call (medians of this run):")
    print_table(["part", "ms", "note"], rows)
    print(
        f"the bare reader-thread round trip is {chain / beyond:.0%} of the time beyond the trivial call"
    )


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
    p.add_argument(
        "--peer", choices=("auto", "none"), default="auto", help=f"run {PEER} side by side (default auto)"
    )
    p.add_argument(
        "--floor",
        choices=("auto", "none"),
        default="auto",
        help="run the bare SDK server (sdk_floor_server.py) side by side (default auto)",
    )
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "serial-mcp-bench"
    p.add_argument("--peer-venv", type=Path, default=cache / f"{PEER}-venv", help="the peer's own venv")
    args = p.parse_args()

    peer_cmd, why = (None, "--peer none") if args.peer == "none" else peer_command(args.peer_venv)
    served, raw_pair, peer_pair, floor_pair = open_pty(), open_pty(), open_pty(), open_pty()
    probe_pairs = (open_pty(), open_pty(), open_pty())
    pairs = (served, raw_pair, peer_pair, floor_pair, *probe_pairs)
    devices = [Responder(pair.master, f"device-{i}").start() for i, pair in enumerate(pairs)]
    try:
        raw = raw_round_trips(raw_pair, args.calls, args.warmup)
        with dev_tty_alias(peer_pair.path) as alias:
            if peer_cmd is not None and alias is None:
                peer_cmd, why = None, "no write access to /dev for its /dev/tty* name"
            floor_path = floor_pair.path if args.floor == "auto" else None
            probe_paths = (probe_pairs[0].path, probe_pairs[1].path, probe_pairs[2].path)
            mine, other, floor, parts = asyncio.run(
                stdio_round_trips(
                    served.path,
                    alias,
                    peer_cmd,
                    floor_path,
                    probe_paths,
                    args.calls,
                    args.warmup,
                    args.mode,
                )
            )
    finally:
        for d in devices:
            d.stop()
        for pair in pairs:
            pair.close()

    print(
        f"transact round trip: {args.calls} calls after {args.warmup} warm-up, stdio, mode={args.mode} — "
        f"{machine_note()}"
    )
    series = [
        ("transact AT\\r → OK (stdio)", mine.transact),
        ("list_connections (stdio)", mine.trivial),
    ]
    if other is not None:
        series += [
            (f"{PEER} transact (stdio)", other.transact),
            (f"{PEER} configure_logging (stdio)", other.trivial),
        ]
    if floor is not None:
        series += [
            ("SDK floor transact (stdio)", floor.transact),
            ("SDK floor list_connections (stdio)", floor.trivial),
        ]
    series += [
        ("engine transact, in process (Python API)", parts.samples["engine"]),
        ("reader thread → loop, bare (the pump's floor)", parts.samples["chain"]),
        ("loop reads the port itself (no thread)", parts.samples["direct"]),
        ("raw PTY round trip", raw),
    ]
    rows = [[name, _ms(median(xs)), _ms(percentile(xs, 90)), _ms(min(xs))] for name, xs in series]
    print_table(["series", "median ms", "p90 ms", "min ms"], rows)
    ratio = median(mine.transact) / median(mine.trivial)
    print(
        f"\ntransact / trivial call = {ratio:.2f}× median, "
        f"{percentile(mine.transact, 90) / percentile(mine.trivial, 90):.2f}× p90  (no goal: retired)"
    )
    print(
        "transact beyond the trivial call: "
        f"{(median(mine.transact) - median(mine.trivial)) * 1000:.3f} ms (median)"
    )
    if other is None:
        print(f"{PEER} side by side: skipped — {why}")
    else:
        vs = median(mine.transact) / median(other.transact)
        print(
            f"transact / {PEER} transact = {vs:.2f}× median  "
            f"(goal ≤ {GOAL_PEER}×: {'met' if vs <= GOAL_PEER else 'NOT met'}); "
            f"{PEER}'s own transact / trivial = {median(other.transact) / median(other.trivial):.2f}×"
        )
    if floor is not None:
        f_t, f_v = median(floor.transact), median(floor.trivial)
        print(
            f"SDK floor: its transact / its trivial call = {f_t / f_v:.2f}×, "
            f"{(f_t - f_v) * 1000:.3f} ms beyond it; "
            f"our transact / its transact = {median(mine.transact) / f_t:.2f}× "
            f"(goal ≤ {GOAL_FLOOR}×: {'met' if median(mine.transact) / f_t <= GOAL_FLOOR else 'NOT met'}), "
            f"our trivial call / its trivial call = {median(mine.trivial) / f_v:.2f}×"
        )
    print_split(mine, parts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
