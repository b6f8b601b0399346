"""A real ser2net bridging a simulated device on a PTY to 127.0.0.1, opened as rfc2217:// and socket://.

Each test gets its own ser2net process (started here, killed at teardown) with two accepters on free
loopback ports: ``telnet(rfc2217),tcp`` and plain ``tcp``, both connected to the slave side of a
``PtyDevice``. The product opens them through the production ``SystemOpener``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.system_open import SystemOpener
from tests.pty.devices import Handler, PtyDevice

if not sys.platform.startswith("linux"):
    pytest.skip("network serial tests bridge a Linux PTY", allow_module_level=True)

_FOUND = shutil.which("ser2net") or next(
    (p for p in ("/usr/sbin/ser2net", "/sbin/ser2net") if os.access(p, os.X_OK)), None
)
if _FOUND is None:
    pytest.skip(
        "ser2net is not installed (Debian/Ubuntu: apt-get install ser2net); CI installs it in .ci/run",
        allow_module_level=True,
    )
SER2NET: str = _FOUND

STARTUP_DEADLINE = 20.0  # seconds for ser2net to listen: an external process, so a bounded wait
_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listening_ports() -> set[int]:
    """Loopback TCP ports in LISTEN state, read from /proc (probing with connect would make ser2net
    open the device and take its one connection slot)."""
    ports: set[int] = set()
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            addr, state = fields[1], fields[3]
            if state == _LISTEN:
                host, port = addr.split(":")
                if host in ("0100007F", "00000000"):
                    ports.add(int(port, 16))
    return ports


CONFIG = """\
%YAML 1.1
---
connection: &rfc2217
  accepter: telnet(rfc2217),tcp,127.0.0.1,{rfc_port}
  connector: serialdev,{path},115200n81,local
  options:
    kickolduser: true
connection: &raw
  accepter: tcp,127.0.0.1,{raw_port}
  connector: serialdev,{path},115200n81,local
  options:
    kickolduser: true
"""


@dataclass
class Ser2Net:
    """One running ser2net and the device behind it."""

    device: PtyDevice
    workdir: Path
    rfc_port: int = 0
    raw_port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    log_path: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log_path = self.workdir / "ser2net.log"

    @property
    def rfc2217_url(self) -> str:
        return f"rfc2217://127.0.0.1:{self.rfc_port}"

    @property
    def socket_url(self) -> str:
        return f"socket://127.0.0.1:{self.raw_port}"

    def url(self, scheme: str, options: str = "") -> str:
        base = self.rfc2217_url if scheme == "rfc2217" else self.socket_url
        return f"{base}?{options}" if options else base

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def start(self) -> Ser2Net:
        last = ""
        for _ in range(3):  # a free port can be taken between probing and ser2net's bind: try again
            self.rfc_port, self.raw_port = free_port(), free_port()
            if self.rfc_port == self.raw_port:
                continue
            if self._spawn():
                return self
            last = self.log()
            self.kill()
        raise RuntimeError(f"ser2net did not start listening: {last}")

    def restart(self) -> None:
        """Start ser2net again on the same ports (after ``kill``), like a bench machine rebooting."""
        if not self._spawn():
            last = self.log()
            self.kill()
            raise RuntimeError(f"ser2net did not restart on its ports: {last}")

    def _spawn(self) -> bool:
        cfg = self.workdir / "ser2net.yaml"
        cfg.write_text(CONFIG.format(rfc_port=self.rfc_port, raw_port=self.raw_port, path=self.device.path))
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(
                # -n: foreground, -d: debug to stdout, -u: no UUCP lock files, -P: pid file here
                [SER2NET, "-n", "-d", "-u", "-c", str(cfg), "-P", str(self.workdir / "ser2net.pid")],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self._wait_listening()

    def _wait_listening(self) -> bool:
        wanted = {self.rfc_port, self.raw_port}
        deadline = time.monotonic() + STARTUP_DEADLINE
        delay = 0.005
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                return False
            if wanted <= listening_ports():
                return True
            time.sleep(delay)  # external process start-up: nothing to wait on but the clock
            delay = min(delay * 2, 0.1)
        return False

    def kill(self) -> None:
        """Stop ser2net at once (SIGKILL): every bridged TCP connection is reset/closed by the kernel."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGKILL)
        proc.wait(10)


@pytest.fixture
def ser2net_factory(tmp_path: Path) -> Iterator[Callable[[Handler | None], Ser2Net]]:
    """``start(handler)`` → a running ser2net bridging a new PtyDevice driven by ``handler``."""
    made: list[Ser2Net] = []

    def start(handler: Handler | None = None) -> Ser2Net:
        dev = PtyDevice(handler).start()
        workdir = tmp_path / f"s2n{len(made)}"
        workdir.mkdir()
        bridge = Ser2Net(dev, workdir)
        made.append(bridge)
        return bridge.start()

    yield start
    for bridge in made:
        bridge.kill()
        bridge.device.close()


@pytest.fixture
async def manager() -> AsyncIterator[ConnectionManager]:
    mgr = ConnectionManager(SystemOpener())
    yield mgr
    await mgr.close_all()
