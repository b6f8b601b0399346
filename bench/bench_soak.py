"""Soak: N connections streaming counter lines for a while, with clients reading, transacting and
opening/closing other ports all the time. Not a test: it prints figures.

A real ``python -m serial_mcp`` over stdio (the SDK client). Each of ``--ports`` PTY far ends writes
numbered lines (``S00000042 ...\\n``) at ``--rate`` bytes/s and answers ``PING\\r`` with ``PONG\\n``
between two lines. Per connection one task reads the stream on its own cursor and checks that the
numbers follow each other, one task sends a ``transact`` every ``--transact-ms``; one more task opens,
writes to, reads and closes a spare PTY in a loop. At the end the far ends stop, the readers drain,
and the script reports bytes sent vs received vs lost (by sequence gaps and by the server's own
``bytes_lost``), the call counts and failures, and the server's RSS and open descriptors at the start
and the end.

    python bench/bench_soak.py [--seconds 60] [--ports 4] [--rate 200000] [--ring 1048576]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import select
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _pty_devices import REPO, PtyPair, find_child, machine_note, monotonic, open_pty, print_table, rss_kib

LINE_PAD = "x" * 40  # a line is ~52 bytes: S + 8 digits + space + pad + newline


class CounterDevice:
    """The far end of one PTY: numbered lines at a steady rate, ``PONG`` for every ``PING``."""

    def __init__(self, pair: PtyPair, rate: int) -> None:
        self.pair = pair
        self.rate = rate
        self.sent = 0
        self.lines = 0
        self.pongs = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-device", daemon=True)

    def start(self) -> CounterDevice:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view and not self._stop.is_set():
            _, ready, _ = select.select([], [self.pair.master], [], 0.2)
            if ready:
                view = view[os.write(self.pair.master, view) :]
        self.sent += len(data) - len(view)

    def _run(self) -> None:
        fd = self.pair.master
        start = monotonic()
        pending = b""
        while not self._stop.is_set():
            due = int((monotonic() - start) * self.rate)
            if self.sent < due:  # catch up in one write: a burst of whole lines
                n = max(1, (due - self.sent) // 52)
                block = "".join(f"S{self.lines + i:08d} {LINE_PAD}\n" for i in range(n)).encode()
                self.lines += n
                self._write(block)
            ready, _, _ = select.select([fd], [], [], 0.005)
            if ready:
                try:
                    pending += os.read(fd, 4096)
                except OSError:
                    return
                while b"PING\r" in pending:
                    _, _, pending = pending.partition(b"PING\r")
                    self.pongs += 1
                    self._write(b"PONG\n")


@dataclass
class Stream:
    """What one reader saw."""

    received: int = 0
    lines: int = 0
    gaps: int = 0  # numbers missing between two consecutive lines seen
    reported_lost: int = 0  # bytes_lost the server reported on this cursor
    next_line: int = 0
    partial: str = ""
    reads: int = 0
    errors: dict[str, int] = field(default_factory=dict)

    def feed(self, text: str) -> None:
        self.received += len(text.encode())
        text = self.partial + text
        *whole, self.partial = text.split("\n")
        for line in whole:
            if not line.startswith("S"):
                continue  # PONG (a transact's reply), or a line cut by a loss
            try:
                n = int(line[1:9])
            except ValueError:
                continue
            if n > self.next_line:
                self.gaps += n - self.next_line
            self.next_line = n + 1
            self.lines += 1


def _count(errors: dict[str, int], result: Any) -> bool:
    if not result.is_error:
        return True
    sc = result.structured_content or {}
    code = str(sc.get("error", {}).get("code", "?"))
    errors[code] = errors.get(code, 0) + 1
    return False


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def reader(client: Client, cid: str, stream: Stream, stop: asyncio.Event) -> None:
    while True:
        r = await client.call_tool(
            "read",
            {"connection_id": cid, "cursor": "soak", "timeout_ms": 300, "max_bytes": 1 << 20},
        )
        stream.reads += 1
        if _count(stream.errors, r):
            sc = r.structured_content or {}
            stream.reported_lost += int(sc.get("bytes_lost", 0))
            stream.feed(str(sc.get("data", "")))
            if stop.is_set() and not sc.get("data"):
                return
        elif stop.is_set():
            return


async def transactor(
    client: Client, cid: str, every_s: float, stats: dict[str, Any], stop: asyncio.Event
) -> None:
    while not stop.is_set():
        r = await client.call_tool(
            "transact",
            {"connection_id": cid, "data": "PING\r", "match": "PONG", "cursor": "tx", "timeout_ms": 5000},
        )
        stats["transacts"] += 1
        if _count(stats["errors"], r):
            matched = (r.structured_content or {}).get("read", {}).get("matched")
            stats["matched"] += 1 if matched else 0
        await asyncio.sleep(every_s)


async def churner(client: Client, spare: PtyPair, stats: dict[str, Any], stop: asyncio.Event) -> None:
    while not stop.is_set():
        r = await client.call_tool("open", {"port": spare.path, "rx_buffer_size": 4 << 20})
        if not _count(stats["errors"], r):
            await asyncio.sleep(0.2)
            continue
        cid = (r.structured_content or {})["connection_id"]
        os.write(spare.master, b"hello\n")
        _count(stats["errors"], await client.call_tool("write", {"connection_id": cid, "data": "x" * 256}))
        _count(stats["errors"], await client.call_tool("read", {"connection_id": cid, "timeout_ms": 100}))
        _count(stats["errors"], await client.call_tool("close", {"connection_id": cid}))
        stats["cycles"] += 1
        try:  # what the server wrote to the spare: nobody else reads it
            while os.read(spare.master, 65536):
                pass
        except BlockingIOError:
            pass


async def run(args: argparse.Namespace) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "serial_mcp"], cwd=str(REPO), env={"PYTHONPATH": str(REPO)}
    )
    pairs = [open_pty() for _ in range(args.ports)]
    spare = open_pty()
    os.set_blocking(spare.master, False)
    devices = [CounterDevice(p, args.rate) for p in pairs]
    streams = [Stream() for _ in pairs]
    tstats: dict[str, Any] = {"transacts": 0, "matched": 0, "errors": {}}
    cstats: dict[str, Any] = {"cycles": 0, "errors": {}}
    async with Client(params, read_timeout_seconds=60) as client:
        pid = find_child("serial_mcp")
        ids = []
        for p in pairs:
            r = await client.call_tool("open", {"port": p.path, "rx_buffer_size": args.ring})
            ids.append((r.structured_content or {})["connection_id"])
        for cid in ids:  # the reading cursor exists before the first byte arrives
            await client.call_tool("read", {"connection_id": cid, "cursor": "soak", "timeout_ms": 0})
        await asyncio.sleep(0.5)
        rss0, fds0, t0 = rss_kib(pid), fd_count(pid), monotonic()
        for d in devices:
            d.start()
        stop = asyncio.Event()
        tasks = [
            asyncio.create_task(reader(client, cid, s, stop)) for cid, s in zip(ids, streams, strict=True)
        ]
        tasks += [
            asyncio.create_task(transactor(client, cid, args.transact_ms / 1000, tstats, stop)) for cid in ids
        ]
        tasks.append(asyncio.create_task(churner(client, spare, cstats, stop)))
        rss_peak = rss0
        samples: list[tuple[float, int]] = []  # (seconds, RSS KiB): does it level off?
        while monotonic() - t0 < args.seconds:
            await asyncio.sleep(1.0)
            samples.append((monotonic() - t0, rss_kib(pid)))
            rss_peak = max(rss_peak, samples[-1][1])
        for d in devices:
            d.stop()
        stop.set()
        await asyncio.gather(*tasks)
        elapsed = monotonic() - t0
        rss1, fds1 = rss_kib(pid), fd_count(pid)
        for cid in ids:
            await client.call_tool("close", {"connection_id": cid})
        await asyncio.sleep(0.5)
        rss_closed, fds_closed = rss_kib(pid), fd_count(pid)
    for p in [*pairs, spare]:
        p.close()

    print(
        f"soak: {args.ports} ports x {args.rate} B/s for {elapsed:.0f} s, ring {args.ring} B"
        f" — {machine_note()}"
    )
    rows = []
    for i, (d, s) in enumerate(zip(devices, streams, strict=True)):
        rows.append(
            [
                f"port {i}",
                f"{d.sent:,}",
                f"{s.received:,}",
                f"{d.sent - s.received:,}",
                f"{s.reported_lost:,}",
                f"{s.gaps:,}",
                f"{s.lines:,}/{d.lines:,}",
                f"{s.reads:,}",
                str(s.errors or "-"),
            ]
        )
    print_table(
        [
            "stream",
            "sent B",
            "received B",
            "missing B",
            "bytes_lost",
            "line gaps",
            "lines seen",
            "reads",
            "errors",
        ],
        rows,
    )
    print(
        f"transact: {tstats['transacts']} calls, {tstats['matched']} matched PONG, "
        f"errors {tstats['errors'] or '-'}; "
        f"open/write/read/close cycles: {cstats['cycles']}, errors {cstats['errors'] or '-'}"
    )
    step = max(1, len(samples) // 8)
    trend = ", ".join(f"{t:.0f}s {kib / 1024:.0f}" for t, kib in samples[step - 1 :: step])
    print(f"RSS over time (MiB): {trend}")
    print_table(
        ["server", "start", "end (ports open)", "peak", "after closing all"],
        [
            ["RSS KiB", f"{rss0:,}", f"{rss1:,}", f"{rss_peak:,}", f"{rss_closed:,}"],
            ["open fds", str(fds0), str(fds1), "-", str(fds_closed)],
        ],
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--ports", type=int, default=4)
    ap.add_argument("--rate", type=int, default=200_000, help="bytes/s each far end sends")
    ap.add_argument("--ring", type=int, default=1 << 20, help="rx_buffer_size of each streaming port")
    ap.add_argument("--transact-ms", type=float, default=250.0, help="pause between transacts per port")
    asyncio.run(run(ap.parse_args()))


if __name__ == "__main__":
    main()
