"""A real labgrid lab on 127.0.0.1 (issue 25): ``labgrid-coordinator``, one ``labgrid-exporter`` and a
simulated board — no mocks of labgrid.

The board is a ``PtyDevice``: the exporter exports the PTY's slave node (``/dev/pts/N``) as a
``RawSerialPort`` (it starts its own ser2net for it, on a port it picks) and a ``NetworkPowerPort``
of model ``simplerest`` whose URL is ``PowerRelay``, a tiny HTTP server in this process that
switches the board: on "power on" it prints its boot log, on "power off" a last gasp, and while on
it answers ``AT`` with ``OK``. A place ``board`` matches the exporter's group ``board``; it is made
with the real ``labgrid-client``.

Processes are waited for by the lines they print ("listening on", "Exporter ready"), not by sleeps.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.pty.devices import PtyDevice

if not sys.platform.startswith("linux"):
    pytest.skip("the lab tests export a Linux PTY", allow_module_level=True)
try:
    import labgrid  # noqa: F401  (the extra: serial-mcp[labgrid])
except ImportError:
    pytest.skip(
        "!!! labgrid is not installed: LABGRID TESTS SKIP (pip install -e '.[test]' brings it; .ci/run does) !!!",
        allow_module_level=True,
    )
SER2NET = shutil.which("ser2net") or next(
    (p for p in ("/usr/sbin/ser2net", "/sbin/ser2net") if os.access(p, os.X_OK)), None
)
if SER2NET is None:
    pytest.skip(
        "!!! ser2net is not installed: LABGRID TESTS SKIP (apt-get install ser2net) !!!",
        allow_module_level=True,
    )

BIN = Path(sys.executable).parent
STARTUP = 30.0  # seconds for a labgrid process to say it is ready (a bound on lack of progress)
BOOT_LOG = b"BOOT0 board rom v1\r\nDRAM ok\r\nkernel starting\r\nlogin: "
LAST_GASP = b"power fail, halting\r\n"
EXPORTER = "lab1"
PLACE = "board"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Board:
    """The simulated board behind the PTY: powered by the relay, answers AT when on."""

    def __init__(self) -> None:
        self.on = True
        self.boots = 0
        self._line = bytearray()
        self.device = PtyDevice(self._receive).start()

    def _receive(self, data: bytes) -> bytes | None:
        if not self.on:
            return None  # a board without power hears nothing
        out = bytearray()
        for b in data:
            if b == 0x0D:
                out += b"\r\nOK\r\n" if bytes(self._line).strip().upper() == b"AT" else b"\r\nERROR\r\n"
                self._line.clear()
            elif b != 0x0A:
                self._line.append(b)
        return bytes(out) or None

    def power(self, on: bool) -> None:
        if on == self.on:
            return
        if not on:
            self.device.send(LAST_GASP)
            self.on = False
            return
        self.on = True
        self.boots += 1
        self.device.send(BOOT_LOG)

    def reset(self, held: bool) -> None:
        """Held in reset the board is quiet; let go, it boots."""
        if held:
            self.on = False
            return
        self.on = True
        self.boots += 1
        self.device.send(BOOT_LOG)


class PowerRelay:
    """``simplerest`` power switch: GET /relay/0/1 on, /relay/0/0 off, /relay/0 → "1" or "0"; and the
    board's reset line as an ``HttpDigitalOutput``: PUT /reset with "1" holds the board in reset,
    "0" lets it go (it boots)."""

    def __init__(self, board: Board) -> None:
        self.board = board
        self.requests: list[str] = []
        relay = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                relay.requests.append(self.path)
                parts = self.path.strip("/").split("/")
                if parts[:2] != ["relay", "0"] or len(parts) > 3:
                    self.send_error(404)
                    return
                if len(parts) == 3:
                    relay.board.power(parts[2] == "1")
                body = b"1" if relay.board.on else b"0"
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_PUT(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                relay.requests.append(f"PUT {self.path} {body.decode()}")
                if self.path != "/reset" or body not in (b"0", b"1"):
                    self.send_error(404)
                    return
                relay.board.reset(body == b"1")
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                return

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.url = self.base + "/relay/{index}/{value}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True, name="power-relay")
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Watched:
    """A subprocess whose output lines are read on a thread, so a test can wait for one."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.argv = argv
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.log: list[str] = []
        threading.Thread(target=self._pump, daemon=True, name=f"watch {argv[0]}").start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.log.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, marker: str, timeout: float = STARTUP) -> None:
        """Block until a line containing ``marker`` is printed (fails if the process ends first)."""
        while True:
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(
                    f"{self.argv[0]} printed no {marker!r} in {timeout}s:\n{''.join(self.log)}"
                ) from None
            if line is None:
                raise AssertionError(f"{self.argv[0]} ended before {marker!r}:\n{''.join(self.log)}")
            if marker in line:
                return

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)


@dataclass
class Lab:
    workdir: Path
    address: str
    board: Board
    relay: PowerRelay
    coordinator: Watched
    exporter: Watched | None = None
    env: dict[str, str] = field(default_factory=dict)

    def start_exporter(self) -> None:
        config = self.workdir / "exporter.yaml"
        config.write_text(
            f"{PLACE}:\n"
            f"  RawSerialPort:\n    port: {self.board.device.path}\n    speed: 115200\n"
            f"  NetworkPowerPort:\n    model: simplerest\n    host: '{self.relay.url}'\n    index: 0\n"
            f"  reset:\n    cls: HttpDigitalOutput\n    url: '{self.relay.base}/reset'\n"
            f"    body_asserted: '1'\n    body_deasserted: '0'\n"
        )
        argv = [
            str(BIN / "labgrid-exporter"),
            "-c",
            self.address,
            "--name",
            EXPORTER,
            "--hostname",
            "127.0.0.1",
            str(config),
        ]
        self.exporter = Watched(argv, self.workdir, self.env)
        self.exporter.wait_for("Exporter ready")

    def stop_exporter(self) -> None:
        if self.exporter is not None:
            self.exporter.stop()
            self.exporter = None

    def client(self, *args: str, user: str = "lab-admin") -> subprocess.CompletedProcess[str]:
        """Run the real ``labgrid-client`` against this lab."""
        env = {**self.env, "LG_USERNAME": user, "LG_HOSTNAME": "admin-host"}
        return subprocess.run(
            [str(BIN / "labgrid-client"), "-x", self.address, *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def show(self) -> str:
        done = self.client("-p", PLACE, "show")
        assert done.returncode == 0, done.stderr
        return done.stdout


@pytest.fixture(autouse=True)
def _lab_sessions_end() -> Iterator[None]:
    """Each test's coordinator sessions (one thread each) end with it; grpc's own poller thread lives
    for the process (tests here are marked ``threads_outlive_the_test`` for it alone)."""
    yield
    from serial_mcp.serial import labgrid_client

    labgrid_client.close_all()
    left = [t.name for t in threading.enumerate() if t.name.startswith("labgrid ")]
    assert not left, f"labgrid session threads outlived the test: {left}"


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    address = f"127.0.0.1:{free_port()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LG_")}
    env["PATH"] = f"{BIN}{os.pathsep}{os.path.dirname(SER2NET or '')}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONUNBUFFERED"] = "1"
    board = Board()
    relay = PowerRelay(board)
    coordinator = Watched([str(BIN / "labgrid-coordinator"), "-l", address], tmp_path, env)
    rig = Lab(tmp_path, address, board, relay, coordinator, env=env)
    try:
        coordinator.wait_for("listening on")
        rig.start_exporter()
        for step in (
            ("create",),
            ("add-match", f"{EXPORTER}/{PLACE}/*"),
            ("set-tags", "board=demo"),
            ("set-comment", "the demo board"),
        ):
            done = rig.client("-p", PLACE, *step)
            assert done.returncode == 0, done.stderr
        yield rig
    finally:
        rig.stop_exporter()
        coordinator.stop()
        relay.close()
        board.device.close()
