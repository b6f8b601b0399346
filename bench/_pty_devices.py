"""PTY pairs and far-end device simulators shared by the benchmarks (not part of the package, not tests).

The bench process owns the master side of each pair; the code under test opens the slave path.
Simulators run in a daemon thread and stop within one select round when ``stop()`` is called.
"""

from __future__ import annotations

import contextlib
import os
import select
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tty
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@dataclass
class PtyPair:
    """One pseudo-terminal: ``master`` is the device end, ``path`` the serial port the host opens."""

    master: int
    slave: int  # kept open so the pair survives the host closing and reopening the slave
    path: str

    def close(self) -> None:
        for fd in (self.master, self.slave):
            try:
                os.close(fd)
            except OSError:
                pass


def open_pty() -> PtyPair:
    """A raw PTY pair (no echo, no CR/LF translation on either side)."""
    m, s = os.openpty()
    tty.setraw(m)
    tty.setraw(s)
    return PtyPair(m, s, os.ttyname(s))


class Responder:
    """A device on the master fd: answers every ``AT\\r`` with ``\\r\\nOK\\r\\n``, echoes anything else.

    Lines are split on CR; a non-AT line is echoed back verbatim with its CR.
    """

    def __init__(self, master: int, name: str = "pty-responder") -> None:
        self._fd = master
        self._stop_r, self._stop_w = os.pipe()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.replies = 0

    def start(self) -> Responder:
        self._thread.start()
        return self

    def stop(self) -> None:
        os.write(self._stop_w, b"x")
        self._thread.join(2.0)
        os.close(self._stop_r)
        os.close(self._stop_w)

    def _run(self) -> None:
        fd = self._fd
        pending = b""
        while True:
            ready, _, _ = select.select([fd, self._stop_r], [], [])
            if self._stop_r in ready:
                return
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                return
            if not chunk:
                return
            pending += chunk
            out = bytearray()
            while b"\r" in pending:
                line, _, pending = pending.partition(b"\r")
                out += b"\r\nOK\r\n" if line == b"AT" else line + b"\r"
                self.replies += 1
            if out:
                os.write(fd, bytes(out))


_FLOOD_CODE = """
import os, sys
import time
fd, total = int(sys.argv[1]), int(sys.argv[2])
path = sys.argv[3] if len(sys.argv) > 3 else "-"
block = open(path, "rb").read() if path != "-" else bytes(range(256)) * 256  # 64 KiB
rate = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0  # bytes/s; 0: as fast as the kernel takes them
sys.stdout.write("ready\\n")
sys.stdout.flush()
sys.stdin.buffer.read(1)  # wait for "go"
left = total
mv = memoryview(block)
if rate <= 0:
    while left:
        n = os.write(fd, mv[: min(left, len(block))])
        left -= n
else:  # a device at a line rate: a slice every millisecond, on an absolute schedule
    step = max(1, int(rate / 1000))
    t0, sent, pos = time.monotonic(), 0, 0
    while left:
        n = os.write(fd, mv[pos : pos + min(left, step, len(block) - pos)])
        left -= n
        sent += n
        pos = (pos + n) % len(block)
        wait = t0 + sent / rate - time.monotonic()
        if wait > 0:
            time.sleep(wait)
sys.stdout.write("done\\n")
sys.stdout.flush()
"""


class Flooder:
    """Writes ``total`` bytes into a PTY master as fast as the kernel takes them, or at ``rate``
    bytes/s (a device at its line rate: a slice every millisecond; writer process only).

    ``mode="process"`` (default) runs the writer in a child process, like a real device on another
    CPU: it does not compete with the reader for the GIL. ``mode="thread"`` writes from a thread of
    this process instead (the worst case for a Python reader). ``go()`` starts the flood.
    """

    def __init__(
        self, master: int, total: int, mode: str = "process", payload: bytes | None = None, rate: float = 0.0
    ) -> None:
        self.total = total
        self._mode = mode
        self._fd = master
        # what is written, repeated: by default 64 KiB of every byte value; text for the event detector's cost
        self._block = payload if payload else bytes(range(256)) * 256
        self._payload_file: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._go = threading.Event()
        self._thread: threading.Thread | None = None
        if mode == "process":
            argv = [sys.executable, "-c", _FLOOD_CODE, str(master), str(total)]
            if payload:
                fd, self._payload_file = tempfile.mkstemp(prefix="flood-")
                os.write(fd, self._block)
                os.close(fd)
            argv += [self._payload_file or "-", str(rate)]
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                pass_fds=[master],
            )
            assert self._proc.stdout is not None
            if self._proc.stdout.readline() != b"ready\n":  # started and waiting: not timed
                raise RuntimeError("flood writer failed to start")
        elif mode == "thread":
            if rate:
                raise ValueError("a paced flood (rate) runs in a writer process")
            self._thread = threading.Thread(target=self._run_thread, name="pty-flooder", daemon=True)
            self._thread.start()
        else:
            raise ValueError(f"unknown flood mode {mode!r}")

    def go(self) -> None:
        if self._proc is not None:
            assert self._proc.stdin is not None
            self._proc.stdin.write(b"g")
            self._proc.stdin.flush()
        else:
            self._go.set()

    def _run_thread(self) -> None:
        self._go.wait()
        block = memoryview(self._block)
        left = self.total
        while left:
            left -= os.write(self._fd, block[: min(left, len(block))])

    def join(self, timeout: float = 10.0) -> None:
        if self._payload_file is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._payload_file)
            self._payload_file = None
        if self._proc is not None:
            try:
                self._proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.communicate()
        elif self._thread is not None:
            self._thread.join(timeout)


# --- /proc helpers ---------------------------------------------------------------------------------

CLK_TCK = os.sysconf("SC_CLK_TCK")


def _stat_fields(path: str) -> list[str]:
    """Fields of a /proc stat file after the ``(comm)`` field (index 0 = state, i.e. field 3)."""
    text = Path(path).read_text()
    return text[text.rindex(")") + 2 :].split()


def cpu_seconds(pid: int) -> float:
    """utime + stime of a whole process (all threads), in seconds."""
    f = _stat_fields(f"/proc/{pid}/stat")
    return (int(f[11]) + int(f[12])) / CLK_TCK


def thread_cpu_seconds(pid: int) -> dict[str, float]:
    """utime + stime per thread, keyed ``"<tid> <name>"``."""
    out: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            f = _stat_fields(str(task / "stat"))
            name = (task / "comm").read_text().strip()
        except OSError:
            continue
        out[f"{task.name} {name}"] = (int(f[11]) + int(f[12])) / CLK_TCK
    return out


def rss_kib(pid: int) -> int:
    """VmRSS of ``pid`` in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def find_child(marker: str, parent: int | None = None) -> int:
    """The pid of a child of ``parent`` (default: this process) whose command line contains ``marker``."""
    parent = os.getpid() if parent is None else parent
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int(_stat_fields(str(entry / "stat"))[1])
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == parent and marker in cmdline:
            found.append(int(entry.name))
    if len(found) != 1:
        raise RuntimeError(f"expected one child running {marker!r}, found {found}")
    return found[0]


# --- figures ---------------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[k]


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    print(line)
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


def machine_note() -> str:
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {load}"


def monotonic() -> float:
    return time.perf_counter()


# The feeder: one process driving every PTY master, a deadline per port spread over the period (like
# unsynchronised devices), non-blocking writes of ``piece`` bytes of the payload in order (each port at its
# own place in it), counting what a full PTY refused as lost at the device, as a UART overrun would be. The
# payload is a file's bytes, or (no file) every byte value.
FEEDER_CODE = """
import os, sys, time, heapq
piece, hz = int(sys.argv[2]), float(sys.argv[3])
text = open(sys.argv[1], "rb").read() if sys.argv[1] else bytes((i * 7 + 13) & 0xFF for i in range(256))
fds = [int(x) for x in sys.argv[4].split(",")]
for fd in fds:
    os.set_blocking(fd, False)
text = text * (2 + (piece * 64) // max(1, len(text)))
period = 1.0 / hz
at = [(i * 997) % (len(text) - piece) for i in range(len(fds))]
sent = [0] * len(fds)
lost = [0] * len(fds)
sys.stdout.write("ready\\n"); sys.stdout.flush()
sys.stdin.buffer.readline()  # "go"
start = time.monotonic()
heap = [(start + period * i / len(fds), i) for i in range(len(fds))]
heapq.heapify(heap)
os.set_blocking(0, False)
writes = 0
while True:
    due, i = heap[0]
    delay = due - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    heapq.heapreplace(heap, (due + period, i))
    p = at[i]
    chunk = text[p:p + piece]
    at[i] = (p + piece) % (len(text) - piece)
    try:
        n = os.write(fds[i], chunk)
    except BlockingIOError:
        n = 0
    sent[i] += piece
    lost[i] += piece - n
    writes += 1
    if writes % 256 == 0:
        try:
            if os.read(0, 64):
                break
        except BlockingIOError:
            pass
print(",".join(map(str, sent)))
print(",".join(map(str, lost)))
sys.stdout.flush()
"""


def start_feeder(
    pairs: Sequence[PtyPair], payload: Path | None, piece: int, hz: float
) -> subprocess.Popen[bytes]:
    """The feeder process on ``pairs``' masters, started and told to go."""
    feeder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            FEEDER_CODE,
            str(payload or ""),
            str(piece),
            str(hz),
            ",".join(str(p.master) for p in pairs),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        pass_fds=[p.master for p in pairs],
    )
    assert feeder.stdin is not None and feeder.stdout is not None
    if feeder.stdout.readline() != b"ready\n":
        feeder.kill()
        raise RuntimeError("feeder failed to start")
    feeder.stdin.write(b"go\n")
    feeder.stdin.flush()
    return feeder


def stop_feeder(feeder: subprocess.Popen[bytes]) -> tuple[list[int], list[int]]:
    """Stop the feeder; the bytes it sent and the bytes a full PTY refused, per port."""
    out, _ = feeder.communicate(b"stop\n", timeout=60)
    sent_line, lost_line = out.decode().split()[:2]
    return [int(x) for x in sent_line.split(",")], [int(x) for x in lost_line.split(",")]
