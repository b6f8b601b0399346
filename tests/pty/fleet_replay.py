"""Real logs replayed at their own pace for the identify fleet (tests/pty/fleet.py): an NMEA receiver's epochs
once a second, a u-blox receiver's UBX epochs once a second, an ESP32's boot and app log paced by its stamps."""

from __future__ import annotations

import itertools
import re
import threading
from collections.abc import Callable
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"

Chunks = list[tuple[float, bytes]]  # (seconds to wait before it, bytes)


def _body(path: Path) -> bytes:
    """A gpsd test log without its ``#`` header lines."""
    data = path.read_bytes()
    at = 0
    while data.startswith(b"#", at):
        at = data.index(b"\n", at) + 1
    return data[at:]


def nmea_chunks(path: Path = DATA / "nmea" / "quectel-l76k-nmea.log", baud: int = 9600) -> Chunks:
    """Sentences as a receiver sends them: an epoch (from one RMC sentence to the next: this receiver's cycle
    begins with RMC) each second, its lines at ``baud`` (10 bits a byte). The log's first, partial epoch is left out."""
    lines = _body(path).splitlines(keepends=True)
    epoch = [i for i, line in enumerate(lines) if line[3:6] == b"RMC"]
    lines = lines[epoch[0] :]
    chunks: Chunks = []
    elapsed = tx = 0.0  # since the epoch began; the last line's time on the wire
    for i, line in enumerate(lines):
        if i and line[3:6] == b"RMC":
            delay, elapsed = max(0.0, 1.0 - elapsed - tx), 0.0
        else:
            delay = tx
            elapsed += delay
        chunks.append((delay, line))
        tx = len(line) * 10 / baud
    return chunks


def ubx_chunks(path: Path = DATA / "gnss" / "ublox-zed-f9p-rtk.log") -> Chunks:
    """The UBX log one navigation epoch (NAV-PVT first) a second."""
    body = _body(path)
    starts = [m.start() for m in re.finditer(rb"\xb5\x62\x01\x07", body)] or [0]
    edges = [0, *starts[1:], len(body)]
    return [(1.0, body[a:b]) for a, b in itertools.pairwise(edges) if b > a]


ESP_STAMP = re.compile(rb"^(?:\x1b\[[0-9;]*m)?[IWEDV] \((\d+)\) ")


def esp32_chunks(path: Path = DATA / "bootlogs" / "esp32" / "esp32-mdf-boot.txt") -> tuple[Chunks, int]:
    """The ESP32 log line by line, each after the gap its ``(ms)`` stamp says (cut to 0.5 s); and the index of the
    first line after the scheduler started, where the replay loops back to (the app running, no new boot)."""
    lines = path.read_bytes().splitlines(keepends=True)
    chunks: Chunks = []
    last = None
    loop_at = 0
    for i, line in enumerate(lines):
        gap = 0.0
        if m := ESP_STAMP.match(line):
            stamp = int(m.group(1))
            gap = 0.0 if last is None else min(0.5, max(0.0, (stamp - last) / 1000))
            last = stamp
        chunks.append((gap, line))
        if b"Starting scheduler" in line:
            loop_at = i + 1
    return chunks, loop_at


def replay(send: Callable[[bytes], None], chunks: Chunks, loop_at: int, stop: threading.Event) -> None:
    """Send ``chunks`` at their pace until ``stop``; after the last, again from ``loop_at``."""
    start = 0
    while True:
        for delay, data in chunks[start:]:
            if stop.wait(delay):
                return
            send(data)
        start = loop_at
