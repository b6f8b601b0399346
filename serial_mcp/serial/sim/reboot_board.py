"""``sim://reboot-board``: a board with a U-Boot-like loader that boots to a shell, and reboots on command.

When the port opens (and after ``reboot`` at the shell or ``reset`` at the loader) it prints a boot banner
and ``Hit any key to stop autoboot:  3``, counting down once a second (``\\b\\b\\b 2`` …, as U-Boot does). A
key during the countdown stops it at the ``=> `` prompt (``printenv``, ``version``, ``boot``, ``reset``);
otherwise it prints a short kernel log and the shell prompt ``# `` (``uname -a``, ``reboot``; other commands
are "not found"). Everything typed is echoed. ``sim://reboot-board?bootdelay=N`` sets the countdown (0–9 s,
default 3).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

from serial_mcp.core.settings import SerialSettings
from serial_mcp.serial.fake import MAX_COMMAND_LINE, FakeDevice
from serial_mcp.serial.sim.timeline import TimedPortHandle, Timeline, sim_option, start_board

BANNER = (
    b"\r\nU-Boot SPL 2024.01 (serial-mcp sim)\r\nTrying to boot from MMC1\r\n"
    b"\r\n\r\nU-Boot 2024.01 (serial-mcp sim board)\r\n\r\nModel: serial-mcp reboot-board\r\n"
    b"DRAM:  512 MiB\r\nMMC:   mmc@1c0f000: 0\r\nNet:   eth0: ethernet@1c30000\r\n"
)
AUTOBOOT = b"Hit any key to stop autoboot: "
KERNEL_LOG = (
    b"\r\nStarting kernel ...\r\n\r\n"
    b"[    0.000000] Booting Linux on physical CPU 0x0\r\n"
    b"[    0.000000] Linux version 6.1.0-sim (serial-mcp)\r\n"
    b"[    1.204511] Run /sbin/init as init process\r\n"
)
LOADER_PROMPT = b"=> "
SHELL_PROMPT = b"# "
ENV = (
    b"arch=arm\r\nbaudrate=115200\r\nboard=reboot-board\r\nbootcmd=run distro_bootcmd\r\nbootdelay=3\r\n"
    b"ethaddr=02:00:00:12:34:56\r\nstdin=serial\r\nstdout=serial\r\n\r\nEnvironment size: 150/65532 bytes\r\n"
)
UNAME = b"Linux sim-board 6.1.0-sim #1 SMP PREEMPT armv7l GNU/Linux\r\n"
BANNER_MS = 50  # from reset to the countdown
KERNEL_MS = 300  # from the end of the countdown to the shell prompt
REBOOT_MS = 100  # from "reboot" to the banner


class RebootBoard:
    """States: ``countdown`` (any key stops it), ``loader`` (``=> ``), ``booting``, ``shell`` (``# ``)."""

    def __init__(self, device: FakeDevice, timeline: Timeline, bootdelay: int) -> None:
        self.device = device
        self.timeline = timeline
        self.bootdelay = bootdelay
        self.state = "booting"
        self.boots = 0
        self._line = bytearray()
        self._lock = threading.Lock()

    def power_on(self) -> None:
        with self._lock:
            self._reset()

    def _reset(self) -> None:
        """Start again from the banner (call with the lock held)."""
        self.timeline.cancel()
        self.state, self.boots = "booting", self.boots + 1
        self._line.clear()
        boot = self.boots
        self.timeline.after(0, lambda: self._if_boot(boot, lambda: self.device.feed(BANNER)))
        self.timeline.after(BANNER_MS, lambda: self._if_boot(boot, self._countdown_start))

    def _if_boot(self, boot: int, step: Callable[[], None]) -> None:
        with self._lock:
            if boot == self.boots:
                step()

    def _countdown_start(self) -> None:
        self.state = "countdown"
        self.device.feed(AUTOBOOT + b" %d " % self.bootdelay)
        boot = self.boots
        for i in range(1, self.bootdelay + 1):
            left = self.bootdelay - i
            self.timeline.after(
                1000 * i, functools.partial(self._if_boot, boot, functools.partial(self._tick, left))
            )
        if self.bootdelay == 0:
            self.timeline.after(0, functools.partial(self._if_boot, boot, functools.partial(self._tick, 0)))

    def _tick(self, left: int) -> None:
        if self.state != "countdown":
            return
        self.device.feed(b"\x08\x08\x08 %d " % left)
        if left == 0:
            self._boot_kernel()

    def _boot_kernel(self) -> None:
        self.state = "booting"
        self.device.feed(KERNEL_LOG)
        boot = self.boots
        self.timeline.after(KERNEL_MS, lambda: self._if_boot(boot, self._shell_ready))

    def _shell_ready(self) -> None:
        self.state = "shell"
        self.device.feed(b"\r\n" + SHELL_PROMPT)

    def __call__(self, data: bytes) -> bytes | None:
        out = bytearray()
        with self._lock:
            for b in data:
                if self.state == "countdown":
                    self.state = "loader"
                    out += b"\x08\x08\x08 0 \r\n" + LOADER_PROMPT
                    continue
                if self.state == "booting":
                    continue  # nobody reads the console while the board starts
                if b in (0x0D, 0x0A):
                    out += b"\r\n"
                    cmd = bytes(self._line).decode("utf-8", "replace").strip()
                    self._line.clear()
                    out += self._command(cmd)
                    if self.state == "booting":
                        break
                elif b in (0x08, 0x7F):
                    if self._line:
                        self._line.pop()
                        out += b"\x08 \x08"
                elif len(self._line) < MAX_COMMAND_LINE:  # a full line takes no more (as U-Boot's)
                    self._line.append(b)
                    out.append(b)
        return bytes(out) or None

    def _command(self, cmd: str) -> bytes:
        if self.state == "loader":
            if cmd == "printenv":
                return ENV + LOADER_PROMPT
            if cmd == "version":
                return b"U-Boot 2024.01 (serial-mcp sim board)\r\n" + LOADER_PROMPT
            if cmd in ("boot", "bootd", "run bootcmd"):
                self._boot_kernel()
                return b""
            if cmd == "reset":
                self.timeline.cancel()
                boot = self.boots
                self.timeline.after(REBOOT_MS, lambda: self._if_boot(boot, self._reset))
                self.state = "booting"
                return b"resetting ...\r\n"
            if not cmd:
                return LOADER_PROMPT
            return f"Unknown command '{cmd.split()[0]}' - try 'help'\r\n".encode() + LOADER_PROMPT
        if cmd == "reboot":
            boot = self.boots
            self.timeline.after(REBOOT_MS, lambda: self._if_boot(boot, self._reset))
            self.state = "booting"
            return b"reboot: Restarting system\r\n"
        if cmd == "uname -a":
            return UNAME + SHELL_PROMPT
        if not cmd:
            return SHELL_PROMPT
        return f"-sh: {cmd.split()[0]}: not found\r\n".encode() + SHELL_PROMPT


def bootdelay_of(port: str) -> int:
    return int(sim_option(port, "bootdelay", "3", "0-9", lambda raw: raw.isdigit() and int(raw) <= 9))


def open_reboot_board(port: str, settings: SerialSettings) -> TimedPortHandle:
    bootdelay = bootdelay_of(port)
    board = start_board(port, lambda d, t: RebootBoard(d, t, bootdelay))
    return TimedPortHandle(board.device, settings, board.timeline)
