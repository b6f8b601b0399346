"""The fingerprint table of :mod:`.port_kinds`: what a line of a port's text says is on the port, as data.

One :class:`KindRow` per fingerprint; adding a kind is adding rows (and a test with real output). Every
pattern runs on one line of cleaned text (ANSI escapes removed, UTF-8 with bad bytes replaced, no line
ending). Rows of role ``prompt`` are tried on the last line only, where a device waiting for input leaves
its prompt; the other roles on every line, and the *last* line any of them matches says what the port is
now (a board that booted through ROM, bootloader and kernel is what its latest stage is).

Roles: ``prompt`` (the device waits for a command: the kind is settled), ``countdown`` (U-Boot's autoboot
countdown or boot menu: any byte stops it), ``banner`` (a boot banner or a stage of a boot chain), ``log``
(a running system's log lines), ``urc`` (a modem's unsolicited result codes). A row with ``hold_ms`` is a
boot line: while less than that much quiet follows the last such line, nothing may be sent (U-Boot's rows
hold longer: a byte that arrives before its countdown still stops autoboot, and it prints the countdown
every second). A row with kind ``""`` is a boot stage that does not say what will answer (a kernel's log
before its login prompt): it takes the kind away from earlier rows.

Frames (NMEA, UBX, Modbus RTU replies) are checked by their own decoders, not by this table.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Literal

Confidence = Literal["high", "medium", "low"]
Role = Literal["prompt", "countdown", "banner", "log", "urc"]

EMPTY: Final[Mapping[str, object]] = MappingProxyType({})
BOOT: Final = 300.0  # hold_ms of a boot line
UBOOT: Final = 3000.0  # hold_ms of U-Boot's lines
AT_OPEN: Final[Mapping[str, object]] = MappingProxyType({"protocol": "at_command"})


@dataclass(frozen=True, slots=True)
class KindRow:
    """One fingerprint: a regex over one cleaned line, and what a match says."""

    name: str
    kind: str  # "" = a boot stage that says nothing yet about what will answer
    role: Role
    pattern: re.Pattern[str]
    confidence: Confidence
    open: Mapping[str, object] = field(default_factory=lambda: EMPTY)
    prompt: str | None = None  # the prompt a transact waits for ("" = the matched text's group "prompt")
    hold_ms: float = 0.0  # a boot line: hold off until this much quiet follows it
    settles: bool = True  # the cue alone settles the kind (no poke can say more)


def _row(
    name: str,
    kind: str,
    role: Role,
    pattern: str,
    confidence: Confidence = "high",
    prompt: str | None = None,
    hold_ms: float = 0.0,
    settles: bool = True,
    open_: Mapping[str, object] = EMPTY,
) -> KindRow:
    return KindRow(name, kind, role, re.compile(pattern), confidence, open_, prompt, hold_ms, settles)


# The longer patterns, by name.
_USER_HOST = r"^[\w.-]+@[\w.-]+(?::\S*)? ?\S*(?P<prompt>[#$] )$"  # root@board:~# , pi@raspberrypi:~ $
_BRACKET = r"^\[[\w.-]+@[\w.-]+ [^\]]*\](?P<prompt>[#$] )$"  # [root@host ~]#
_UBOOT = r"^U-Boot (?:SPL |TPL )?(?:20\d\d\.\d\d|\S+ \(\w{3} [ \d]?\d \d{4} - )"  # or a vendor's version
_ESP_BOOT_TAGS = r"(?:boot(?:\.esp\w+)?|esp_image|qio_mode|flash_encrypt|secure_boot\w*|bootloader_\w+)"
_ESP_BOOTLOADER = (
    rf"^[IWE] \(\d+\) {_ESP_BOOT_TAGS}: "  # ESP-IDF's 2nd-stage bootloader; the app's tags differ
)
_COUNTDOWN = r"to stop autoboot|^Autobooting in \d+ s"
_MP_BANNER = r"^MicroPython \S+ on \d{4}-\d\d-\d\d"  # MicroPython v1.24.1 on 2024-11-29; …
_MP_RAW = r"^raw REPL; CTRL-B to exit"
_KERNEL_HANDOFF = r"^(?:Starting kernel \.\.\.|## Booting kernel from)"
_ZEPHYR_LOG = r"^\[\d\d:\d\d:\d\d\.\d{3},\d{3}\] <(?:inf|wrn|err|dbg)> "
_URC = (
    r"^(?:RING|NO CARRIER|RDY|\+C(?:G|E)?REG: \d.*|\+CMTI: \".*|\+CRING: \w.*|\+CPIN: (?:READY|SIM PIN)"
    r"|\^SYSSTART.*|\+QIND: .*|\+CFUN: \d)$"
)

# name, kind, role, pattern, confidence, prompt ("" = the pattern's group "prompt"), hold_ms, settles, open
ROWS: Final[tuple[KindRow, ...]] = (
    # --- prompts (last line only) -----------------------------------------------------------------------
    _row("uboot_prompt", "uboot", "prompt", r"^(?P<prompt>=> |U-Boot> )$", "high", ""),
    _row("linux_login", "linux_login", "prompt", r"^[\w.-]+ (?P<prompt>login: ?)$", "high", ""),
    _row("login_bare", "linux_login", "prompt", r"^(?P<prompt>login: )$", "medium", ""),
    _row("shell_user_host", "linux_shell", "prompt", _USER_HOST, "high", ""),
    _row("shell_bracket", "linux_shell", "prompt", _BRACKET, "high", ""),
    _row("shell_path", "linux_shell", "prompt", r"^(?:/\S*|~\S*) (?P<prompt>[#$] )$", "medium", ""),
    _row("shell_bare", "linux_shell", "prompt", r"^(?P<prompt>[#$] )$", "medium", ""),
    _row("zephyr_prompt", "zephyr", "prompt", r"^(?P<prompt>(?:uart|rtt|usb):~\$ ?)$", "high", ""),
    _row("micropython_prompt", "micropython", "prompt", r"^(?P<prompt>>>> )$", "medium", ""),
    # --- U-Boot waiting for a key (any line; the last one counts) ------------------------------------------
    _row("uboot_countdown", "uboot", "countdown", _COUNTDOWN, "high", "=> ", UBOOT, False),
    _row("uboot_bootmenu", "uboot", "countdown", r"^\s*Press UP/DOWN to move", "high", "=> ", UBOOT, False),
    # --- banners and boot stages ---------------------------------------------------------------------------
    _row("uboot_banner", "uboot", "banner", _UBOOT, "high", None, UBOOT, False),
    _row("micropython_banner", "micropython", "banner", _MP_BANNER, "high", ">>> ", 0, False),
    _row("micropython_raw_banner", "micropython", "banner", _MP_RAW, "high", ">", 0, False),
    _row("micropython_soft_reboot", "micropython", "banner", r"^MPY: soft reboot$", "high", ">>> ", 0, False),
    _row("zephyr_banner", "zephyr", "banner", r"\*{3,} Booting Zephyr OS\b", "high", None, BOOT, False),
    _row("esp_rom_ets", "esp_rom", "banner", r"^ets \w{3} {1,2}\d{1,2} \d{4}\b", "high", None, BOOT),
    _row("esp_rom_rst", "esp_rom", "banner", r"^rst:0x[0-9a-fA-F]+ \(\w+\),\s?boot:0x", "high", None, BOOT),
    _row("esp_rom_esp", "esp_rom", "banner", r"ESP-ROM:\w", "high", None, BOOT),
    _row("esp_rom_download", "esp_rom", "banner", r"waiting for download$"),
    _row("esp_idf_bootloader", "esp_rom", "banner", _ESP_BOOTLOADER, "medium", None, BOOT),
    _row("linux_kernel", "", "banner", r"^\[ *\d+\.\d{6}\] ", "high", None, BOOT),
    _row("linux_version", "", "banner", r"^Linux version \d+\.\d+", "high", None, BOOT),
    _row("uboot_starting_kernel", "", "banner", _KERNEL_HANDOFF, "high", None, BOOT),
    _row("seabios", "", "banner", r"^SeaBIOS \(version ", "high", None, BOOT),
    # --- a running system's log lines ----------------------------------------------------------------------
    _row("esp_idf_log", "esp_idf_app", "log", r"^[IWEDV] \(\d+\) [\w.-]+: "),
    _row("zephyr_log", "zephyr", "log", _ZEPHYR_LOG, "medium"),
    # --- a modem's unsolicited result codes ----------------------------------------------------------------
    _row("at_urc", "at_modem", "urc", _URC, "medium", None, 0, False, AT_OPEN),
)

#: A reply to ``AT\r`` that says a modem answered: a final result code on a line of its own.
AT_FINAL: Final = re.compile(r"^(?:OK|ERROR|\+CME ERROR: .*|\+CMS ERROR: .*)$")
#: MicroPython seen: its banner, its raw REPL, or its prompt on a line of its own.
MICROPYTHON_SEEN: Final = re.compile(
    rb"MicroPython \S+ on \d{4}-\d\d-\d\d|raw REPL; CTRL-B to exit|(?:\A|\n)>>> ?[\r\n]*\Z"
)
