"""The simulated devices of ``bench_tasks.py`` (issue 39's twelve bench tasks), all in-process.

``BenchOpener`` routes ``sim://`` to the built-in simulators and every other name to a device made
here: a ``FakeDevice`` with a responder, or a board on a ``Timeline`` that starts when its port is
opened (a board reset by the adapter's DTR, a receiver that streams from the moment it is heard).
Real bytes where the repository has them: the OpenWrt U-Boot boot log, the Quectel L76K NMEA log,
the u-blox M8T log, the Cortex-M fault report captured from ``tests/firmware/cortex_m/fault-demo.elf``.
``scale`` shrinks every device clock (0.1: ten times faster) so the unit test runs the same paths fast.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from serial_mcp.core import checksums
from serial_mcp.core.settings import SerialSettings
from serial_mcp.serial.fake import FakeDevice, FakeOpener, FakePortHandle
from serial_mcp.serial.sim import SimOpener
from serial_mcp.serial.sim.modem import ModemResponder
from serial_mcp.serial.sim.timeline import TimedPortHandle, Timeline

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
FAULT_ELF_DIR = ROOT / "tests" / "firmware" / "cortex_m"
UBOOT_LOG = DATA / "bootlogs" / "openwrt-COVR-X1860" / "Bootlog.txt"
NMEA_LOG = DATA / "nmea" / "quectel-l76k-nmea.log"
M8T_LOG = DATA / "gnss" / "u-blox-m8t-time.log"
CORTEX_M = DATA / "crashes" / "cortex-m-qemu.json"

# 1 — a Quectel EC25-like modem (sim://modem has no +CGMM/+CGMR/+CGSN); the identity is made up
MODEM_FACTS = {"maker": "Quectel", "model": "EC25", "revision": "EC25EFAR06A06M4G", "imei": "867962041234562"}
MODEM_FACTS |= {"sim": "READY", "signal": "+CSQ: 21,99"}
_MODEM = {
    b"ATI": b"\r\nQuectel\r\nEC25\r\nRevision: EC25EFAR06A06M4G\r\n\r\nOK\r\n",
    b"AT+CGMI": b"\r\nQuectel\r\n\r\nOK\r\n",
    b"AT+CGMM": b"\r\nEC25\r\n\r\nOK\r\n",
    b"AT+CGMR": b"\r\nEC25EFAR06A06M4G\r\n\r\nOK\r\n",
    b"AT+CGSN": b"\r\n867962041234562\r\n\r\nOK\r\n",
    b"AT+CPIN?": b"\r\n+CPIN: READY\r\n\r\nOK\r\n",
    b"AT+CSQ": b"\r\n+CSQ: 21,99\r\n\r\nOK\r\n",
}


class QuectelModem(ModemResponder):
    def answer(self, cmd: bytes) -> bytes:
        return _MODEM.get(cmd) or super().answer(cmd)


# 2 — U-Boot with an autoboot countdown: the real boot log, then one countdown line a second
UBOOT_ENV = (
    b"baudrate=115200\r\nbootcmd=nmbm nmbm0 read 0x80010000 0x180000 0x600000; bootm 0x80010000\r\n"
    b"bootdelay=3\r\nethaddr=a8:63:7d:2f:05:a8\r\nipaddr=192.168.1.1\r\nserverip=192.168.1.2\r\n"
    b"stderr=uartlite0@1e000c00\r\nstdin=uartlite0@1e000c00\r\nstdout=uartlite0@1e000c00\r\n\r\n"
    b"Environment size: 262/131068 bytes\r\n"
)
KERNEL = b"Starting kernel ...\r\n\r\n"
PROMPT = b"=> "


def uboot_banner() -> bytes:
    text = UBOOT_LOG.read_bytes()
    return text[: text.index(b"Hit any key")].replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


class UBootBoard:
    """Banner at power-on, ``Hit any key to stop autoboot:  N`` lines a second apart; any byte before
    0 stops it at ``=> `` (the key is consumed, as U-Boot's getchar does); at 0, ``Starting kernel``."""

    def __init__(self, device: FakeDevice, timeline: Timeline, scale: float, bootdelay: int = 3) -> None:
        self.device, self.timeline, self.state = device, timeline, "countdown"
        self.booted_kernel = False
        self._line = bytearray()
        device.feed(uboot_banner())
        for left in range(bootdelay, -1, -1):
            timeline.after(1000 * scale * (bootdelay - left), lambda n=left: self._tick(n))

    def _tick(self, left: int) -> None:
        if self.state != "countdown":
            return
        self.device.feed(b"Hit any key to stop autoboot: %2d \r\n" % left)
        if left == 0:
            self.state, self.booted_kernel = "kernel", True
            self.device.feed(KERNEL)

    def __call__(self, data: bytes) -> bytes | None:
        out = bytearray()
        if self.state == "countdown":
            self.state, data = "prompt", data[1:]
            out += PROMPT
        if self.state != "prompt":
            return None
        for b in data:
            if b not in (13, 10):
                self._line.append(b)
                out.append(b)
                continue
            cmd = bytes(self._line).strip()
            self._line.clear()
            out += b"\r\n" + (UBOOT_ENV if cmd == b"printenv" else b"") + PROMPT
        return bytes(out)


# 3, 4 — the Quectel L76K's real sentences, one epoch (GGA first) a second; 4 breaks some checksums
def nmea_epochs() -> list[bytes]:
    lines = [ln.rstrip(b"\r\n") + b"\r\n" for ln in NMEA_LOG.read_bytes().splitlines() if ln.startswith(b"$")]
    starts = [i for i, ln in enumerate(lines) if ln[3:6] == b"GGA"]
    return [b"".join(lines[a:b]) for a, b in zip(starts, [*starts[1:], len(lines)], strict=True)]


def break_checksums(epochs: list[bytes], every: int = 3) -> tuple[list[bytes], list[bytes]]:
    """Every ``every``-th epoch's second sentence gets a wrong checksum: (epochs, the broken lines)."""
    out, broken = [], []
    for i, epoch in enumerate(epochs):
        lines = epoch.splitlines(keepends=True)
        if i % every == 1 and len(lines) > 1:
            line = lines[1].rstrip(b"\r\n")
            lines[1] = line[:-1] + (b"0" if line[-1:] != b"0" else b"1") + b"\r\n"
            broken.append(lines[1].rstrip(b"\r\n"))
        out.append(b"".join(lines))
    return out, broken


def gga_fix(sentence: bytes) -> dict[str, str]:
    f = sentence.split(b"*")[0].decode().split(",")
    return {"time": f[1], "lat": f[2], "lon": f[4], "quality": f[6], "sats": f[7], "hdop": f[8]}


GGA_QUALITY = {"0": "none", "1": "gps", "2": "dgps", "4": "rtk", "5": "float", "6": "dr"}


def degrees(ddmm: str) -> str:
    """An NMEA ``ddmm.mmmm`` / ``dddmm.mmmm`` as decimal degrees to six places."""
    whole = int(float(ddmm) // 100)
    return f"{whole + (float(ddmm) - 100 * whole) / 60:.6f}"


# 9 — the u-blox M8T's real stream, cut at each UBX-TIM-TP (one an epoch)
def m8t_epochs() -> list[bytes]:
    data = M8T_LOG.read_bytes()
    data = data[data.index(b"\xb5\x62") :]
    starts = [i for i in range(len(data)) if data.startswith(b"\xb5\x62\x0d\x01", i)]
    return [data[a:b] for a, b in zip(starts, [*starts[1:], len(data)], strict=True)]


class Streamer:
    """Plays ``epochs`` one every ``period_s`` from power-on; ``sent`` counts the epochs played."""

    def __init__(self, device: FakeDevice, timeline: Timeline, epochs: list[bytes], period_s: float) -> None:
        self.device, self.sent = device, 0
        for i, epoch in enumerate(epochs):
            timeline.after(1000 * period_s * i, lambda e=epoch: self._play(e))

    def _play(self, epoch: bytes) -> None:
        self.sent += 1
        self.device.feed(epoch)

    def __call__(self, data: bytes) -> bytes | None:
        return None


# 5 — ten binary frames AA 55 seq len payload CRC-16/MODBUS LE, seqs 3 and 7 corrupted
BAD_SEQS = (3, 7)
FRAMING = {
    "type": "binary", "sync": "AA55", "length": {"offset": 3},
    "checksum": {"algorithm": "crc16_modbus", "endianness": "little"}, "max_length": 260,
}  # fmt: skip


def crc16_modbus(data: bytes) -> bytes:
    """CRC-16/MODBUS of ``data``, little-endian, as it ends an RTU frame (the project's catalogue)."""
    return checksums.compute("crc16_modbus", data).to_bytes(2, "little")


def binary_frames() -> bytes:
    out = b""
    for seq in range(10):
        payload = bytes([0x10 + seq, seq * 3, 0x42])
        frame = b"\xaa\x55" + bytes([seq, len(payload)]) + payload
        frame += crc16_modbus(frame)
        if seq in BAD_SEQS:
            frame = frame[:5] + bytes([frame[5] ^ 0xFF]) + frame[6:]  # a payload byte hit on the wire
        out += frame
    return out


# 6 — a Linux console at login: (a Buildroot board's words)
LINUX_UNAME = "Linux buildroot 6.1.44 #1 SMP Tue Aug 15 10:12:03 UTC 2023 armv7l GNU/Linux"
LINUX_FREE = (
    "               total        used        free      shared  buff/cache   available\r\n"
    "Mem:          505868       21344      466532          52       17992      474144\r\n"
    "Swap:              0           0           0\r\n"
)


class LinuxConsole:
    def __init__(self) -> None:
        self.state, self._line = "login", bytearray()

    def __call__(self, data: bytes) -> bytes | None:
        out = bytearray()
        for b in data:
            if b not in (13, 10):
                self._line.append(b)
                if self.state != "password":
                    out.append(b)
                continue
            line = bytes(self._line).decode(errors="replace").strip()
            self._line.clear()
            out += b"\r\n" + self._answer(line).encode()
        return bytes(out)

    def _answer(self, line: str) -> str:
        if self.state == "login":
            if line:
                self.state = "password" if line == "root" else "login"
                return "Password: " if line == "root" else "\r\nLogin incorrect\r\nbuildroot login: "
            return "\r\nWelcome to Buildroot\r\nbuildroot login: "
        if self.state == "password":
            self.state = "shell" if line == "root" else "login"
            return "# " if line == "root" else "\r\nLogin incorrect\r\nbuildroot login: "
        reply = {"uname -a": LINUX_UNAME + "\r\n", "free": LINUX_FREE, "": ""}
        return reply.get(line, f"-sh: {line.split()[0]}: not found\r\n") + "# "


# 8 — a Modbus RTU slave 1 at 9600 8N1 (other settings: it hears noise and stays quiet)
REGISTERS = [230, 231, 229, 498, 1203, 0, 65535, 17, 4660, 1]


def modbus_slave(device: FakeDevice) -> Callable[[bytes], bytes | None]:
    def answer(data: bytes) -> bytes | None:
        s = device.settings_history[-1]
        if (s.baud_rate, s.data_bits, s.parity, s.stop_bits) != (9600, 8, "none", 1):
            return None
        if len(data) != 8 or crc16_modbus(data[:6]) != data[6:] or data[:2] != b"\x01\x03":
            return None
        first, count = int.from_bytes(data[2:4], "big"), int.from_bytes(data[4:6], "big")
        values = REGISTERS[first : first + count]
        reply = bytes([1, 3, 2 * len(values)]) + b"".join(v.to_bytes(2, "big") for v in values)
        return reply + crc16_modbus(reply)

    return answer


# 10 — a Cortex-M board in a reboot loop: the real nRF Connect SDK fault report of fault-demo.elf
def fault_report() -> bytes:
    blocks = json.loads(CORTEX_M.read_text())["blocks"]
    text: str = next(b["text"] for b in blocks if b["mode"] == "n")
    return text.encode()


CRASH_WHERE = "parse_frame at app.c:26"
BOOT_BANNER = b"*** Booting nRF Connect SDK v2.5.0 ***\r\n"


class CrashLoop:
    """From power-on: the fault report every ``period_s``, each one followed by a reboot. The report is
    the real one; the boot banner before the ready line is nRF Connect SDK's (``fault-demo`` prints none)."""

    def __init__(self, device: FakeDevice, timeline: Timeline, period_s: float, runs: int = 60) -> None:
        ready, _, fault = fault_report().partition(b"\r\n")
        self.boot = BOOT_BANNER + ready + b"\r\n"
        self.fault = fault[: fault.index(b"Resetting system\r\n") + len(b"Resetting system\r\n")]
        self.crashes = 0
        device.feed(self.boot)
        for i in range(runs):
            timeline.after(1000 * period_s * (i + 0.5), lambda: self._crash(device))

    def _crash(self, device: FakeDevice) -> None:
        self.crashes += 1
        device.feed(self.fault)
        device.feed(self.boot)

    def __call__(self, data: bytes) -> bytes | None:
        return None


class BenchOpener:
    """``sim://`` to the simulators; a name in ``boards`` powers its board on at each open; the rest
    are ``FakeOpener`` devices. ``last`` holds each board port's latest board."""

    def __init__(self) -> None:
        self.fake = FakeOpener()
        self.sim = SimOpener()
        self.boards: dict[str, Callable[[FakeDevice, Timeline], object]] = {}
        self.last: dict[str, object] = {}

    def add_board(self, name: str, make: Callable[[FakeDevice, Timeline], object]) -> None:
        self.boards[name] = make

    def open(self, port: str, settings: SerialSettings) -> FakePortHandle:
        if port.startswith("sim://"):
            return self.sim.open(port, settings)
        make = self.boards.get(port)
        if make is None:
            return self.fake.open(port, settings)
        device = FakeDevice(port)
        timeline = Timeline(port)
        board = make(device, timeline)
        device.responder = board  # type: ignore[assignment]
        self.last[port] = board
        return TimedPortHandle(device, settings, timeline)


def last_position(epochs: list[bytes]) -> tuple[int, int]:
    """The last UBX-NAV-POSLLH's latitude and longitude (degrees x 1e-7, as decoded) in ``epochs``."""
    data = b"".join(epochs)
    at = data.rindex(b"\xb5\x62\x01\x02")
    lon = int.from_bytes(data[at + 10 : at + 14], "little", signed=True)
    lat = int.from_bytes(data[at + 14 : at + 18], "little", signed=True)
    return lat, lon
