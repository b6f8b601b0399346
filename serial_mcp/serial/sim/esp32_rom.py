"""``sim://esp32-rom``: an ESP32 board with esptool's auto-program circuit, its ROM loader and 4 MB of flash.

DTR and RTS drive EN and IO0 through the usual two-transistor circuit (EN is low while RTS is asserted and
DTR is not, IO0 is low while DTR is asserted and RTS is not), so esptool's reset sequences work through the
handle as on a real board: EN low resets the chip; when EN has been released for ``EN_RISE_MS`` (the RC on
EN) the chip samples IO0 — low: the ROM prints ``boot:0x3 (DOWNLOAD_BOOT…)`` / ``waiting for download`` and
runs the serial loader (``sim/esp32_rom_loader``: enough for ``esptool --no-stub``); high: the ROM boots
the flash and an ESP-IDF-style log follows, naming the app found at 0x10000 (project, version, size,
MD5) — a small ``hello_world`` until something else is flashed there, a refusal and a boot loop if what
is there is not a valid image. The flash keeps its bytes across resets. An app whose code segment starts
with ``SIM_PANIC:<cause>`` (a NUL ends the cause) panics in ``app_main`` as an ESP-IDF app does: the Guru
Meditation dump for that cause, its PC and backtrace in that segment, ``Rebooting...``, and a software
reset (``rst:0xc (SW_CPU_RESET)``) — a crash loop, for tests of crash and boot-loop detection.

The UART runs at 115200 after a reset; in download mode the ROM takes the rate of the host's first SYNC
and CHANGE_BAUDRATE switches it (after its answer). Bytes sent while the port's rate and the chip's differ
by more than 3 % are lost both ways (counted in ``lost_rx`` / ``lost_tx``), as on a real UART.
``sim://esp32-rom?boot=download`` powers on in download mode (IO0 held low at power-on), for hosts that
cannot drive DTR/RTS, such as a program on a PTY (run esptool with ``--before no-reset``).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Final
from urllib.parse import parse_qs, urlsplit

from serial_mcp import messages
from serial_mcp.core.settings import SerialSettings
from serial_mcp.core.unknown_keys import did_you_mean
from serial_mcp.errors import InvalidArgument
from serial_mcp.serial.fake import FakeDevice
from serial_mcp.serial.sim.esp32_rom_loader import FLASH_SIZE, Esp32RomLoader, Exit
from serial_mcp.serial.sim.esp_app_image import AppImage, build_app_image, parse_app_image
from serial_mcp.serial.sim.esp_rom_protocol import SYNC, SlipDecoder, parse_command, slip_encode
from serial_mcp.serial.sim.timeline import TimedPortHandle, Timeline

EN_RISE_MS: Final = 20  # from EN released to the chip leaving reset and sampling IO0
BOOTLOADER_MS: Final = 40  # from the ROM banner to the 2nd-stage bootloader's first line
APP_MS: Final = 120  # from there to the app's lines
BOOT_LOOP_MS: Final = 200  # a bootloader that found nothing to boot resets after this long
ROM_BAUD: Final = 115200
BAUD_TOLERANCE: Final = 0.03
APP_OFFSET: Final = 0x10000
APP_PARTITION: Final = 0x100000
OPTIONS: Final = {"boot": ("flash", "download")}
PANIC_MARK: Final = b"SIM_PANIC:"  # the code of an app that panics in app_main; its cause follows
PANIC_MS: Final = 30  # from app_main to the panic

ROM_BANNER = b"ets Jun  8 2016 00:22:57\r\n\r\n"
RESETS = {"power": b"0x1 (POWERON_RESET)", "sw_cpu": b"0xc (SW_CPU_RESET)", "sw": b"0x3 (SW_RESET)"}
DOWNLOAD = b"boot:0x3 (DOWNLOAD_BOOT(UART0/UART1/SDIO_REI_REO_V2))\r\nwaiting for download\r\n"
FLASH_BOOT = (
    b"boot:0x13 (SPI_FAST_FLASH_BOOT)\r\nconfigsip: 0, SPIWP:0xee\r\n"
    b"clk_drv:0x00,q_drv:0x00,d_drv:0x00,cs0_drv:0x00,hd_drv:0x00,wp_drv:0x00\r\n"
    b"mode:DIO, clock div:2\r\nload:0x3fff0030,len:7104\r\nload:0x40078000,len:15576\r\n"
    b"load:0x40080400,len:4\r\nload:0x40080404,len:3876\r\nentry 0x4008064c\r\n"
)
BOOTLOADER = (
    "I (31) boot: ESP-IDF v5.1.2 2nd stage bootloader",
    "I (31) boot: compile time Jan  1 2024 00:00:00",
    "I (31) boot: Multicore bootloader",
    "I (36) boot: chip revision: v3.0",
    "I (40) boot.esp32: SPI Speed      : 40MHz",
    "I (44) boot.esp32: SPI Mode       : DIO",
    "I (49) boot.esp32: SPI Flash Size : 4MB",
    "I (53) boot: Enabling RNG early entropy source...",
    "I (59) boot: Partition Table:",
    "I (62) boot: ## Label            Usage          Type ST Offset   Length",
    "I (70) boot:  0 nvs              WiFi data        01 02 00009000 00006000",
    "I (77) boot:  1 phy_init         RF data          01 01 0000f000 00001000",
    "I (85) boot:  2 factory          factory app      00 00 00010000 00100000",
    "I (92) boot: End of partition table",
)
FACTORY_APP = build_app_image(
    "hello_world", "v1.0", "v5.1.2", ("Jan  1 2024", "00:00:00"), b"serial-mcp simulated ESP32 app\x00" * 8
)


def _lines(lines: list[str]) -> bytes:
    return "".join(f"{line}\r\n" for line in lines).encode()


def app_log(app: AppImage | str) -> tuple[bytes, bytes | None]:
    """The bootloader's lines about the app at 0x10000 and the app's own (None: nothing boots)."""
    if isinstance(app, str):
        return _lines([
            f"E (96) esp_image: image at 0x{APP_OFFSET:x} {app}",
            "E (102) boot: Factory app partition is not bootable",
            "E (107) boot: No bootable app partitions in the partition table",
        ]), None  # fmt: skip
    boot = []
    t = 96
    for n, seg in enumerate(app.segments):
        mapped = 0x3F400000 <= seg.load < 0x3F800000 or 0x400D0000 <= seg.load < 0x40400000
        boot.append(
            f"I ({t}) esp_image: segment {n}: paddr={APP_OFFSET + seg.offset:08x} vaddr={seg.load:08x} "
            f"size={seg.length:05x}h ({seg.length:6d}) {'map' if mapped else 'load'}"
        )
        t += 8
    boot += [f"I ({t}) boot: Loaded app from partition at offset 0x{APP_OFFSET:x}",
             f"I ({t + 5}) boot: Disabling RNG early entropy source..."]  # fmt: skip
    t += 16
    lines = [
        f"I ({t}) cpu_start: Multicore app",
        f"I ({t + 9}) cpu_start: Pro cpu up.",
        f"I ({t + 9}) cpu_start: Starting app cpu, entry point is 0x{app.entry:08x}",
        "I (0) cpu_start: App cpu up.",
        f"I ({t + 27}) cpu_start: Pro cpu start user code",
        f"I ({t + 27}) cpu_start: cpu freq: 160000000 Hz",
        f"I ({t + 27}) cpu_start: Application information:",
    ]
    t += 32
    if app.project is not None:
        lines += [
            f"I ({t}) cpu_start: Project name:     {app.project}",
            f"I ({t + 5}) cpu_start: App version:      {app.version}",
            f"I ({t + 9}) cpu_start: Compile time:     {app.built}",
            f"I ({t + 15}) cpu_start: ELF file SHA256:  {(app.elf_sha256 or '')[:16]}...",
            f"I ({t + 21}) cpu_start: ESP-IDF:          {app.idf}",
        ]
    t += 26
    lines += [
        f"I ({t}) cpu_start: Image:            {app.size} bytes at 0x{APP_OFFSET:x}, MD5 {app.md5}",
        f"I ({t + 6}) heap_init: Initializing. RAM available for dynamic allocation:",
        f"I ({t + 43}) spi_flash: detected chip: winbond",
        f"I ({t + 47}) spi_flash: flash io: dio",
        f"I ({t + 55}) main_task: Started on CPU0",
        f"I ({t + 65}) main_task: Calling app_main()",
    ]
    return _lines(boot), _lines(lines)


def panic_request(flash: bytes | bytearray, app: AppImage) -> tuple[str, int] | None:
    """(cause, code load address) when the app's code asks for a panic (``PANIC_MARK``), else None."""
    for seg in app.segments:
        if 0x40000000 <= seg.load < 0x40400000:  # IRAM or flash-mapped text: code
            start = APP_OFFSET + seg.offset
            code = bytes(flash[start : start + min(seg.length, 64)])
            if code.startswith(PANIC_MARK):
                cause = code[len(PANIC_MARK) :].split(b"\0", 1)[0].decode("ascii", "replace").strip()
                return cause[:32] or "LoadProhibited", seg.load
    return None


def panic_dump(cause: str, code: int, elf_sha256: str | None) -> bytes:
    """What ESP-IDF v5 prints on ESP32 for an unhandled exception in app_main (UART panic handler)."""
    pc, caller, task = code + 0x14, code + 0x42, 0x40085B21
    return _lines([
        f"Guru Meditation Error: Core  0 panic'ed ({cause}). Exception was unhandled.",
        "",
        "Core  0 register dump:",
        f"PC      : 0x{pc:08x}  PS      : 0x00060630  A0      : 0x{0x80000000 | caller & 0x3FFFFFFF:08x}"
        "  A1      : 0x3ffb5640",
        "A2      : 0x00000000  A3      : 0x3ffb5680  A4      : 0x3ffb5684  A5      : 0x00000001",
        "EXCVADDR: 0x00000000  LBEG    : 0x4000c2e0  LEND    : 0x4000c2f6  LCOUNT  : 0xffffffff",
        "",
        "",
        f"Backtrace: 0x{pc:08x}:0x3ffb5640 0x{caller:08x}:0x3ffb5660 0x{task:08x}:0x3ffb5680",
        "",
        "",
        f"ELF file SHA256: {(elf_sha256 or '0' * 16)[:16]}",
        "",
        "Rebooting...",
    ])  # fmt: skip


class Esp32Board:
    """States: ``reset`` (EN low), ``download`` (the ROM loader), ``booting``, ``app``, ``halted`` (running
    RAM code the simulation cannot execute). Thread-safe: the host's writes, line changes and the timeline
    all take the board's lock."""

    def __init__(self, device: FakeDevice, timeline: Timeline, rom: Esp32RomLoader | None = None) -> None:
        self.device = device
        self.timeline = timeline
        self.rom = rom or Esp32RomLoader()
        self.state = "reset"
        self.boots = 0
        self.boot_modes: list[str] = []  # "download" / "flash" per boot (the last 64)
        self.uart_baud = ROM_BAUD
        self.autobaud = False  # download mode before the first SYNC: the ROM takes the host's rate
        self.strap_download = False  # IO0 as latched at the last chip reset
        self.lost_rx = 0
        self.lost_tx = 0
        self._in_reset = False
        self._io0_history: list[tuple[float, bool]] = []  # (when, IO0 low) at each line change, the last 32
        self._slip = SlipDecoder()
        self._lock = threading.Lock()

    # --- the lines ----------------------------------------------------------------------------------

    def en_low(self) -> bool:
        return self.device.lines["rts"] and not self.device.lines["dtr"]

    def io0_low(self) -> bool:
        return self.device.lines["dtr"] and not self.device.lines["rts"]

    def power_on(self, download: bool = False) -> None:
        with self._lock:
            if self.en_low():
                self._hold_reset()
            else:
                self._boot("power", download or self.io0_low())

    def on_line(self, device: FakeDevice, name: str, level: bool) -> None:
        """``FakeDevice.on_line``: DTR/RTS changed (from whichever thread changed them)."""
        if name not in ("dtr", "rts"):
            return
        with self._lock:
            now = time.monotonic()
            self._io0_history = [*self._io0_history[-31:], (now, self.io0_low())]
            if self.en_low():
                if not self._in_reset:
                    self._hold_reset()
            elif self._in_reset:
                self._in_reset = False
                step = functools.partial(self._released, now + EN_RISE_MS / 1000)
                self.timeline.after(EN_RISE_MS, functools.partial(self._if_boot, self.boots, step))

    def _hold_reset(self) -> None:
        self._in_reset = True
        self._new_boot()
        self.state = "reset"

    def _released(self, sample_at: float) -> None:
        """The chip leaves reset: IO0 counts as it was at ``sample_at`` (however late this runs)."""
        if self._in_reset:
            return
        io0_low = self.io0_low()
        for when, low in self._io0_history:
            if when <= sample_at:
                io0_low = low
        self._boot("power", io0_low)

    def _new_boot(self) -> int:
        self.timeline.cancel()
        self.boots += 1
        self.rom.reset()
        self._slip.reset()
        self.uart_baud = ROM_BAUD
        self.rom.uart_baud = ROM_BAUD
        self.autobaud = False
        return self.boots

    def _if_boot(self, boot: int, step: Callable[[], None]) -> None:
        with self._lock:
            if boot == self.boots:
                step()

    # --- booting ------------------------------------------------------------------------------------

    def _boot(self, reason: str, download: bool) -> None:
        """A chip reset ends: the ROM prints its banner and runs the loader or boots the flash."""
        boot = self._new_boot()
        self.strap_download = download
        self.boot_modes = [*self.boot_modes[-63:], "download" if download else "flash"]
        head = ROM_BANNER + b"rst:" + RESETS[reason] + b","
        if download:
            self.state, self.autobaud = "download", True
            self._emit(head + DOWNLOAD)
            return
        self.state = "booting"
        self._emit(head + FLASH_BOOT)
        self.timeline.after(BOOTLOADER_MS, functools.partial(self._if_boot, boot, self._bootloader))

    def _bootloader(self) -> None:
        app = parse_app_image(memoryview(self.rom.flash)[APP_OFFSET:], APP_PARTITION)
        boot_lines, app_lines = app_log(app)
        self._emit(_lines(list(BOOTLOADER)) + boot_lines)
        boot = self.boots
        if app_lines is None:  # the bootloader gives up and resets the chip: a boot loop
            step = functools.partial(self._boot, "sw", False)
            self.timeline.after(BOOT_LOOP_MS, functools.partial(self._if_boot, boot, step))
            return
        assert not isinstance(app, str)
        panic = panic_request(self.rom.flash, app)
        run = functools.partial(self._app, app_lines, boot, panic, app.elf_sha256)
        self.timeline.after(APP_MS, functools.partial(self._if_boot, boot, run))

    def _app(self, lines: bytes, boot: int, panic: tuple[str, int] | None, sha: str | None) -> None:
        self.state = "app"
        self._emit(lines)
        if panic is not None:
            crash = functools.partial(self._panic, panic[0], panic[1], sha)
            self.timeline.after(PANIC_MS, functools.partial(self._if_boot, boot, crash))

    def _panic(self, cause: str, code: int, sha: str | None) -> None:
        """app_main faulted: the panic handler's dump, then a software reset into the same image."""
        self._emit(panic_dump(cause, code, sha))
        self._boot("sw_cpu", False)

    # --- the UART -----------------------------------------------------------------------------------

    def _host_baud(self) -> int:
        history = self.device.settings_history
        return history[-1].baud_rate if history else ROM_BAUD

    def _in_step(self) -> bool:
        return abs(self._host_baud() - self.uart_baud) <= BAUD_TOLERANCE * self.uart_baud

    def _emit(self, data: bytes) -> None:
        if self._in_step():
            self.device.feed(data)
        else:
            self.lost_tx += len(data)

    def __call__(self, data: bytes) -> bytes | None:
        """``FakeDevice.responder``: what the host wrote. Answers are fed from here, under the lock."""
        with self._lock:
            if self.state != "download":
                return None  # in reset, booting or running, nothing reads the UART
            if not self.autobaud and not self._in_step():
                self.lost_rx += len(data)
                return None
            for frame in self._slip.feed(data):
                if self.autobaud and isinstance(frame, bytes):
                    cmd = parse_command(frame)
                    if cmd is not None and cmd.op == SYNC:  # the ROM measures the host's rate on SYNC
                        self.uart_baud = self.rom.uart_baud = self._host_baud()
                        self.autobaud = False
                result = self.rom.handle(frame)
                self._emit(b"".join(slip_encode(f) for f in result.frames))
                if result.exit is not None:
                    self._exit(result.exit)
                    if self.state != "download":
                        break
        return None

    def _exit(self, exit: Exit) -> None:
        if exit.kind == "baud":
            self.uart_baud = self.rom.uart_baud = exit.value
        elif exit.kind == "run":  # into the app in flash, as a flash boot does after the ROM's part
            boot = self._new_boot()
            self.state = "booting"
            self.timeline.after(BOOTLOADER_MS, functools.partial(self._if_boot, boot, self._bootloader))
        elif exit.kind == "reboot":  # a software reset: the strapping latched at the last chip reset holds
            self._boot("sw_cpu", self.strap_download)
        else:  # "jump": code in RAM runs now, which the simulation cannot do. It says so in one SLIP
            # frame where esptool waits for its stub's "OHAI": esptool stops at once with "Failed to start
            # stub flasher. Unexpected response: b'…--no-stub…'" instead of waiting for ever (issue 37)
            self._emit(slip_encode(messages.SIM_ESP32_NO_RAM_CODE.encode()))
            self._new_boot()
            self.state = "halted"


class Esp32PortHandle(TimedPortHandle):
    """The host side of ``sim://esp32-rom``; ``board`` is the simulated board (tests look inside)."""

    def __init__(
        self, device: FakeDevice, settings: SerialSettings, timeline: Timeline, board: Esp32Board
    ) -> None:
        super().__init__(device, settings, timeline)
        self.board = board


def boot_option(port: str) -> bool:
    """True for ``?boot=download``; unknown options and values are refused."""
    query = parse_qs(urlsplit(port).query, keep_blank_values=True)
    for key in query:
        if key not in OPTIONS:
            raise InvalidArgument(
                messages.SIM_UNKNOWN_OPTION.format(
                    port=port, option=key, hint=did_you_mean(key, OPTIONS), allowed=", ".join(OPTIONS)
                ),
                port=port,
            )
    value = query.get("boot", ["flash"])[-1]
    if value not in OPTIONS["boot"]:
        raise InvalidArgument(
            messages.SIM_BAD_OPTION.format(port=port, option="boot", allowed="flash or download"), port=port
        )
    return value == "download"


def open_esp32_rom(port: str, settings: SerialSettings) -> Esp32PortHandle:
    download = boot_option(port)
    timeline = Timeline(port)
    device = FakeDevice(port)
    rom = Esp32RomLoader(flash_size=FLASH_SIZE)
    rom.flash[APP_OFFSET : APP_OFFSET + len(FACTORY_APP)] = FACTORY_APP
    board = Esp32Board(device, timeline, rom)
    device.responder = board
    device.on_line = board.on_line
    handle = Esp32PortHandle(device, settings, timeline, board)  # records the settings the UART compares
    board.power_on(download)
    return handle
