"""RFC 2217 throughput: pyserial's ``rfc2217://`` client through serial-mcp's mirror vs through ser2net.

One PTY pair; its master end is the device, in this process: an echo (every byte back), a sink
(counts what comes) or a flood (sends ``--mib`` MiB). The server under test opens the slave end:

* ours: ``python -m serial_mcp mirror PTY --rfc2217`` (a subprocess: the server's own process, as
  ser2net has its own), the URL read from its one line of stdout;
* ser2net (``telnet(rfc2217),tcp`` accepter, as in ``tests/net/conftest.py``), started per round.

The client, here, is the same pyserial ``serial_for_url("rfc2217://…")`` for both. Per round and
server, after the connection is up: ``up`` (client writes N MiB, until the device has them all),
``down`` (device floods N MiB, until the client has read them all), ``echo`` (client writes N MiB
while reading the N MiB echoed). Every byte is checked (nothing lost, nothing reordered). Rounds
alternate between the servers; the table shows the median MiB/s of each and ours/ser2net.

Goal (issue 23.1): ours ≥ 0.9 × ser2net in each direction (pyserial's client parses byte by byte,
so it is the bottleneck of both: ser2net is the fair reference, not the raw PTY).

    python bench/bench_rfc2217.py [--mib 1] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tty
from collections.abc import Callable
from pathlib import Path

import serial

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _pty_devices import REPO, machine_note, median, print_table

SER2NET_CONFIG = """\
%YAML 1.1
---
connection: &rfc2217
  accepter: telnet(rfc2217),tcp,127.0.0.1,{port}
  connector: serialdev,{path},115200n81,local
  options:
    kickolduser: true
"""


class Device:
    """The PTY's master end: ``mode`` echo | sink | flood (``flood(n)`` sends n bytes)."""

    def __init__(self) -> None:
        self.master, self.slave = os.openpty()
        tty.setraw(self.master)
        tty.setraw(self.slave)
        self.path = os.ttyname(self.slave)
        self.mode = "sink"
        self.received = bytearray()
        self.got = threading.Condition()
        self._stop_r, self._stop_w = os.pipe()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            ready, _, _ = select.select([self.master, self._stop_r], [], [])
            if self._stop_r in ready:
                return
            try:
                data = os.read(self.master, 65536)
            except OSError:  # no one has the slave open between rounds: EIO until the next opens it
                time.sleep(0.01)
                continue
            if self.mode == "echo":
                self.send(data)
            with self.got:
                self.received += data
                self.got.notify_all()

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            select.select([], [self.master], [])
            view = view[os.write(self.master, view) :]

    def wait_received(self, n: int, timeout: float = 120.0) -> None:
        with self.got:
            if not self.got.wait_for(lambda: len(self.received) >= n, timeout):
                raise RuntimeError(f"device got {len(self.received)} of {n} bytes")

    def close(self) -> None:
        os.write(self._stop_w, b"x")
        self._thread.join(5)
        for fd in (self.master, self.slave, self._stop_r, self._stop_w):
            os.close(fd)


def read_all(port: serial.SerialBase, n: int) -> bytes:
    got = bytearray()
    while len(got) < n:
        chunk = port.read(n - len(got))
        if not chunk:
            raise RuntimeError(f"client got {len(got)} of {n} bytes")
        got += chunk
    return bytes(got)


def measure(url: str, dev: Device, payload: bytes) -> dict[str, float]:
    """Seconds for up, down and echo of ``payload`` through ``url``; every byte checked."""
    out: dict[str, float] = {}
    # ser2net on a PTY does not answer line changes (a PTY has no lines): pyserial's client then
    # needs ign_set_control to open; given to both servers, it only changes the (unmeasured) open
    with serial.serial_for_url(f"{url}?ign_set_control", baudrate=115200, timeout=30) as port:
        dev.mode, dev.received = "sink", bytearray()
        t = time.perf_counter()
        port.write(payload)
        dev.wait_received(len(payload))
        out["up"] = time.perf_counter() - t
        assert bytes(dev.received) == payload, "up: bytes lost or reordered"

        t = time.perf_counter()
        sender = threading.Thread(target=dev.send, args=(payload,))
        sender.start()
        got = read_all(port, len(payload))
        out["down"] = time.perf_counter() - t
        sender.join()
        assert got == payload, "down: bytes lost or reordered"

        dev.mode, dev.received = "echo", bytearray()
        t = time.perf_counter()
        writer = threading.Thread(target=port.write, args=(payload,))
        writer.start()
        got = read_all(port, len(payload))
        out["echo"] = time.perf_counter() - t
        writer.join()
        assert got == payload, "echo: bytes lost or reordered"
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, proc: subprocess.Popen[bytes], deadline_s: float = 20.0) -> None:
    """ser2net is another program: its start-up has nothing to wait on but its socket appearing
    in /proc/net/tcp (a probing connect would take its one client slot)."""
    want = f"0100007F:{port:04X}"
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError("ser2net exited")
        with open("/proc/net/tcp") as f:
            if any(want in line and " 0A " in line for line in f):
                return
        time.sleep(0.02)
    raise RuntimeError("ser2net did not listen")


def with_ser2net(path: str, work: Path, run: Callable[[str], dict[str, float]]) -> dict[str, float]:
    exe = shutil.which("ser2net") or "/usr/sbin/ser2net"
    port = free_port()
    cfg = work / "ser2net.yaml"
    cfg.write_text(SER2NET_CONFIG.format(port=port, path=path))
    proc = subprocess.Popen(
        [exe, "-n", "-u", "-c", str(cfg), "-P", str(work / "ser2net.pid")],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:
        wait_listening(port, proc)
        return run(f"rfc2217://127.0.0.1:{port}")
    finally:
        proc.kill()
        proc.wait(10)


def with_ours(path: str, run: Callable[[str], dict[str, float]]) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SERIAL_MCP_")}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.Popen(
        [sys.executable, "-m", "serial_mcp", "mirror", path, "--rfc2217"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=REPO,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().decode().strip()
        if not url.startswith("rfc2217://"):
            raise RuntimeError(f"serial-mcp mirror did not start: {url!r}")
        return run(url)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mib", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if not (shutil.which("ser2net") or os.access("/usr/sbin/ser2net", os.X_OK)):
        sys.exit("ser2net is not installed (apt-get install ser2net)")
    payload = os.urandom(int(args.mib * (1 << 20)))  # every byte value: 0xFF (IAC) is escaped both ways
    dev = Device()
    results: dict[str, list[dict[str, float]]] = {"serial-mcp": [], "ser2net": []}
    try:
        with tempfile.TemporaryDirectory() as tmp:

            def run(url: str) -> dict[str, float]:
                return measure(url, dev, payload)

            for _ in range(args.rounds):
                results["ser2net"].append(with_ser2net(dev.path, Path(tmp), run))
                results["serial-mcp"].append(with_ours(dev.path, run))
    finally:
        dev.close()
    mib = len(payload) / (1 << 20)
    rows = []
    for way in ("up", "down", "echo"):
        ours = mib / median([r[way] for r in results["serial-mcp"]])
        theirs = mib / median([r[way] for r in results["ser2net"]])
        rows.append([way, f"{ours:.2f}", f"{theirs:.2f}", f"{ours / theirs:.2f}x"])
    print(f"pyserial rfc2217:// client, {mib:g} MiB per direction, {args.rounds} rounds, median MiB/s")
    print(machine_note())
    print_table(["direction", "serial-mcp", "ser2net", "ours/ser2net (goal >= 0.9x)"], rows)


if __name__ == "__main__":
    main()
