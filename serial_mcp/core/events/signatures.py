"""The signature table: every boot banner, reset announcement and crash dump the detector knows, as data.

One :class:`Signature` per row, grouped by family; adding a family is adding rows (and a test with real
output).
A row is tried on a line only when the line contains one of its ``triggers`` (literal bytes, found by one
Aho-Corasick pass over each chunk: the prefilter, :mod:`.prefilter`); then its ``head`` regex runs on the
line's text (ANSI escapes removed, UTF-8 with bad bytes replaced, trailing whitespace stripped). The rows of
the leftmost trigger in the line are tried first, in table order; the first whose head matches wins.

A row with ``max_lines`` opens a *block*: the lines after the head belong to the event until its ``end`` regex
matches (that line included), a line does not match ``cont`` (that line excluded), ``max_lines`` lines were
seen, the head of a row not in ``merges`` arrives, or the stream goes idle. Lines between ``quiet`` (a start
and an end regex, e.g. an ESP-IDF core dump) are not counted against ``max_lines``.

Named groups in the head, ``rules``, ``end`` and in the heads of merged rows become fields:

* ``reason`` → ``Event.reason``; ``pc`` → ``Event.pc`` (hex); the first value of a scalar wins;
* ``bt`` → ``Event.backtrace`` from ESP-IDF ``PC:SP`` pairs (the first such line wins);
* ``addr`` → appended to ``Event.backtrace``; ``frame`` → appended to ``Event.trace``;
* any other name → ``Event.detail[name]``.

Boot rows carry a ``rank`` in the boot chain (ROM 0, firmware 1, SPL 10, bootloader 20, kernel 30, runtime
50): a boot banner ranked above the last one seen is a ``stage`` of the same boot, otherwise a new ``boot``. A
``handoff`` row (MCUboot jumping to the image) is a stage that sets the rank, so the application's banner that
follows is a stage too.

Every pattern is written for Python ``re`` without nested quantifiers, and must also compile on RE2 (checked
by the tests), so none can backtrack catastrophically; they only ever run on lines of at most ``MAX_LINE``
bytes.
"""

from __future__ import annotations

from typing import Any

from serial_mcp.core.events.model import Severity
from serial_mcp.core.events.model import Signature as Signature
from serial_mcp.core.events.signatures_cortex_m import CORTEX_M_SIGNATURES

# --- shared pieces ------------------------------------------------------------------------------------------

_RST = (
    r"\brst:(?P<rst_code>0x[0-9a-fA-F]+) \((?P<reason>[^)]*)\),\s?boot:(?P<boot_code>0x[0-9a-fA-F]+)"
    r"(?: \((?P<boot_mode>[A-Z0-9_]+))?"
)
_HEX = r"0x[0-9a-fA-F]+"

_ESP_RULES = (
    r"^PC\s*:\s*(?P<pc>0x[0-9a-fA-F]{8})",
    r"^MEPC\s*:\s*(?P<pc>0x[0-9a-fA-F]{8})",
    r"\bRA\s*:\s*(?P<ra>0x[0-9a-fA-F]{8})",
    r"\bEXCCAUSE:\s*(?P<exccause>0x[0-9a-fA-F]+)",
    r"\bEXCVADDR:\s*(?P<excvaddr>0x[0-9a-fA-F]+)",
    r"\bMCAUSE\s*:\s*(?P<mcause>0x[0-9a-fA-F]+)",
    r"\bMTVAL\s*:\s*(?P<mtval>0x[0-9a-fA-F]+)",
    r"^Debug exception reason: (?P<debug_reason>.+)",
    r"^ELF file SHA256:\s*(?P<elf_sha256>[0-9a-fA-F]+)",
)
_ESP_END = r"^(?:Rebooting\.\.\.|CPU halted\.|Entering gdb stub now\.)"
_ESP_QUIET = (r"=+ CORE DUMP START =+", r"=+ CORE DUMP END =+")
_ESP_PANIC = (
    "esp_guru",
    "esp_abort",
    "esp_assert",
    "esp_assertion",
    "esp_stack_overflow",
    "esp_stack_smashing",
    "esp_corrupt_heap",
    "esp_ubsan",
    "esp_backtrace",
    "esp_rebooting",
)


def _esp_crash(name: str, triggers: tuple[bytes, ...], head: str, reason: str | None = None) -> Signature:
    return Signature(
        name,
        "esp-idf",
        "crash",
        "critical",
        triggers,
        head,
        reason=reason,
        rules=_ESP_RULES,
        end=_ESP_END,
        max_lines=120,
        quiet=_ESP_QUIET,
        merges=_ESP_PANIC,
    )


# Linux: a timestamp ``[    1.234567] `` or a syslog ``kernel: `` may come first.
_K = r"(?:^|\]\s|:\s|\[ )"
_LINUX_FRAME = (
    r"^(?:\[[\d. ]+\]\s*)?\s*(?:\[<(?P<addr>[0-9a-f]+)>\]\s*)?(?:\? )?"
    r"(?P<frame>[A-Za-z_.$][\w.$]*\+0x[0-9a-f]+/0x[0-9a-f]+(?: \[\w+\])?)\s*$"
)
_LINUX_RULES = (
    r"\bRIP: [0-9a-f]{4}:0x(?P<pc>[0-9a-f]+)",
    r"\bRIP: [0-9a-f]{4}:(?:\[<(?P<pc>[0-9a-f]+)>\]\s*(?:\[<[0-9a-f]+>\]\s*)?)?"
    r"(?P<pc_symbol>[A-Za-z_.][\w.]*\+0x[0-9a-f]+/0x[0-9a-f]+)",
    r"\bE?IP: (?:[0-9a-f]{4}:)?\[<(?P<pc>[0-9a-f]+)>\]",
    r"\bpc : \[<(?P<pc>[0-9a-f]+)>\]",
    r"\bpc : (?P<pc_symbol>[A-Za-z_.][\w.]*\+0x[0-9a-f]+/0x[0-9a-f]+)",
    r"\bepc\s*: (?P<pc>[0-9a-f]{8,16})\b",
    r"\bepc == (?P<pc>[0-9a-f]{8,16})\b",
    r"\bPC is at (?P<pc_symbol>\S+)",
    r"\bCPU: (?P<cpu>\d+) (?:UID: \d+ )?PID: (?P<pid>\d+) Comm: (?P<comm>\S+)",
    _LINUX_FRAME,
)
_LINUX_CRASH = (
    "linux_bug",
    "linux_kernel_bug",
    "linux_oops",
    "linux_trap",
    "linux_unable",
    "linux_panic",
    "linux_call_trace",
    "linux_warning",
    "linux_ubsan",
)
_LINUX_END_TRACE = r"---\[ end trace"


def _linux(
    name: str, triggers: tuple[bytes, ...], head: str, severity: Severity, reason: str | None = None
) -> Signature:
    return Signature(
        name,
        "linux",
        "crash",
        severity,
        triggers,
        head,
        reason=reason,
        rules=_LINUX_RULES,
        end=_LINUX_END_TRACE,
        max_lines=100,
        merges=_LINUX_CRASH,
        merges_after=("linux_panic",),
        grace_lines=30,
    )


_ZEPHYR_RULES = (
    r"Faulting instruction address (?:\(r15/pc\):|=) (?P<pc>0x[0-9a-fA-F]+)",  # 2.x+ esf_dump / 1.x printk
    r"\bmepc: (?P<pc>[0-9a-fA-F]+)",
    r"\br14/lr:\s+(?P<lr>0x[0-9a-fA-F]+)",
    r"\bra: (?P<ra>[0-9a-fA-F]{8,16})\b",
    r"\b(?P<fault_register>BFAR|MMFAR) Address: (?P<fault_address>0x[0-9a-fA-F]+)",
    r"Current thread: (?P<thread>.+)",
)
_ZEPHYR_MERGES = ("zephyr_fault", "zephyr_riscv_fault", "zephyr_assert", "zephyr_fatal")


def _zephyr(name: str, triggers: tuple[bytes, ...], head: str) -> Signature:
    return Signature(
        name,
        "zephyr",
        "crash",
        "critical",
        triggers,
        head,
        rules=_ZEPHYR_RULES,
        # "Halting system" (kernel/fatal.c); 1.x: "Fatal fault in thread 0x...! Aborting." or "... in ISR!
        # Spinning..." (nRF Connect SDK's "Resetting system" ends it too: the head of a reset row, not merged)
        end=r"\bHalting system|^Fatal fault in (?:thread|ISR)\b",
        max_lines=40,
        merges=_ZEPHYR_MERGES,
    )


_UBOOT_RULES = (
    r"^elr: (?P<pc>[0-9a-f]+) lr : (?P<lr>[0-9a-f]+) \(reloc\)",
    r"^reloc pc : \[<(?P<pc>[0-9a-f]+)>\]\s+lr : \[<(?P<lr>[0-9a-f]+)>\]",
)
_UBOOT_END = r"^(?:resetting \.\.\.|### ERROR ### Please RESET the board ###)"


def _boot(
    name: str, family: str, triggers: tuple[bytes, ...], head: str, rank: int, **more: Any
) -> Signature:
    """A boot row; ``more``: Signature's ``end``, ``max_lines``, ``merges``, ``handoff``."""
    return Signature(name, family, "boot", "info", triggers, head, rank=rank, **more)


def _esp_rom(name: str, trigger: bytes, head: str) -> Signature:
    """An ESP ROM banner row: the ``rst:`` line with the reset reason follows within three lines."""
    return _boot(name, "esp-rom", (trigger,), head, 0, end=_RST, max_lines=3, merges=("esp_rom_rst",))


def _reset(
    name: str, family: str, triggers: tuple[bytes, ...], head: str, reason: str = "software reset"
) -> Signature:
    return Signature(name, family, "reset", "warning", triggers, head, reason=reason)


# --- the table, in matching order ---------------------------------------------------------------------------

SIGNATURES: tuple[Signature, ...] = (
    # ESP ROM bootloaders: ESP32's ``ets Jun  8 2016`` banner and the newer chips' ``ESP-ROM:`` banner come a
    # line or two before the ``rst:`` line that gives the reset reason. (ESP8266's one-line ``ets Jan  8 2013,
    # rst cause:2, boot mode:(3,6)`` is found as a boot by the first row, its reason not decoded.)
    _esp_rom("esp_rom_ets", b"ets J", r"\bets (?P<rom_date>[A-Z][a-z]{2} [ \d]\d \d{4})"),
    _esp_rom("esp_rom", b"ESP-ROM:", r"ESP-ROM:(?P<rom>\S+)"),
    _boot("esp_rom_rst", "esp-rom", (b"rst:0x",), _RST, 0),
    # ESP-IDF: the second-stage bootloader, then the application.
    _boot(
        "esp_bootloader",
        "esp-idf",
        (b"stage bootloader",),
        r"\bboot: ESP-IDF (?P<version>\S+) 2nd stage bootloader",
        20,
    ),
    _boot("esp_app", "esp-idf", (b"Pro cpu start user code",), r"\bcpu_start: Pro cpu start user code", 40),
    _boot("esp_app_main", "esp-idf", (b"Calling app_main",), r"\bmain_task: Calling app_main\(\)", 41),
    # ESP-IDF panics (docs: api-guides/fatal-errors).
    _esp_crash(
        "esp_guru",
        (b"Guru Meditation Error",),
        r"Guru Meditation Error: Core\s+(?P<core>\d+) panic'ed \((?P<reason>.*?)\)\.?"
        r"(?: Exception was unhandled\.)?$",
    ),
    _esp_crash(
        "esp_abort",
        (b"abort() was called",),
        r"\babort\(\) was called at PC (?P<pc>" + _HEX + r")(?: on core (?P<core>\d+))?",
        reason="abort() was called",
    ),
    _esp_crash("esp_assert", (b"assert failed:",), r"(?P<reason>\bassert failed: .+)"),
    _esp_crash("esp_assertion", (b'assertion "',), r'(?P<reason>\bassertion ".*" failed: .+)'),
    _esp_crash(
        "esp_stack_overflow",
        (b"stack overflow in task",),
        r"\*\*\*ERROR\*\*\* A stack overflow in task (?P<task>\S+) has been detected",
        reason="stack overflow",
    ),
    _esp_crash(
        "esp_stack_smashing",
        (b"Stack smashing protect failure",),
        r"Stack smashing protect failure",
        reason="stack smashing",
    ),
    _esp_crash("esp_corrupt_heap", (b"CORRUPT HEAP:",), r"(?P<reason>CORRUPT HEAP: .+)"),
    _esp_crash("esp_ubsan", (b"Undefined behavior of type",), r"Undefined behavior of type (?P<reason>\w+)"),
    Signature(
        "esp_task_wdt",
        "esp-idf",
        "crash",
        "error",
        (b"Task watchdog got triggered",),
        r"\btask_wdt: Task watchdog got triggered",
        reason="task watchdog",
        rules=(r"\btask_wdt:\s+- (?P<tasks>\S.*)", r"\btask_wdt: CPU (?P<running_cpu>\d+): (?P<running>\S+)"),
        end=_ESP_END,
        cont=r"\btask_wdt:",
        max_lines=16,
        merges=("esp_backtrace", "esp_abort", "esp_rebooting"),
    ),
    Signature(
        "esp_brownout",
        "esp-idf",
        "crash",
        "critical",
        (b"Brownout detector was triggered",),
        r"Brownout detector was triggered",
        reason="brownout",
    ),
    Signature(
        "esp_backtrace",
        "esp-idf",
        "crash",
        "warning",
        (b"Backtrace:",),
        r"^Backtrace:\s*(?P<bt>0x[0-9a-fA-F]+:0x.*)",
        reason="backtrace",
    ),
    _reset("esp_rebooting", "esp-idf", (b"Rebooting...",), r"^Rebooting\.\.\."),
    # Linux.
    _boot(
        "linux_booting", "linux", (b"Booting Linux on",), r"Booting Linux on physical CPU (?P<cpu>\S+)", 30
    ),
    _boot("linux_version", "linux", (b"Linux version ",), _K + r"Linux version (?P<version>\S+)", 31),
    Signature(
        "linux_panic",
        "linux",
        "crash",
        "critical",
        (b"Kernel panic - not syncing",),
        _K + r"Kernel panic - not syncing: ?(?P<reason>.*)",
        rules=_LINUX_RULES,
        end=r"---\[ end Kernel panic",
        max_lines=100,
        merges=_LINUX_CRASH,
    ),
    _linux(
        "linux_oops",
        (b"Oops", b"Internal error: "),
        _K + r"(?P<reason>(?:Internal error: )?Oops(?:: | - |\[#\d+\]).*|Internal error: .*\[#\d+\].*)",
        "error",
    ),
    _linux("linux_bug", (b"BUG: ",), _K + r"BUG: (?P<reason>.+)", "error"),
    _linux("linux_kernel_bug", (b"kernel BUG at ",), _K + r"(?P<reason>kernel BUG at .+)", "error"),
    _linux(
        "linux_trap",
        (
            b"general protection fault",
            b"divide error: ",
            b"invalid opcode: ",
            b"stack segment: ",
            b"double fault",
            b"Unhandled fault: ",
            b"hard LOCKUP",
        ),
        _K + r"(?P<reason>(?:general protection fault|divide error|invalid opcode|stack segment)[:,] .+"
        r"|PANIC: double fault.*|Unhandled fault: .+|.*Watchdog detected hard LOCKUP.*)",
        "error",
    ),
    _linux(
        "linux_unable", (b"Unable to handle kernel",), r"(?P<reason>\bUnable to handle kernel .+)", "error"
    ),
    _linux(
        "linux_warning",
        (b"WARNING: ",),
        _K + r"WARNING: (?P<reason>(?:CPU: \d+ PID: \d+ at |\[).+|.+ at [\w.]+\+0x[0-9a-f]+/0x[0-9a-f]+.*)",
        "warning",
    ),
    _linux("linux_ubsan", (b"UBSAN: ",), _K + r"(?P<reason>UBSAN: .+)", "error"),
    Signature(
        "linux_call_trace",
        "linux",
        "crash",
        "warning",
        (b"Call Trace:", b"Call trace:"),
        _K + r"Call [Tt]race:",
        reason="call trace",
        rules=_LINUX_RULES,
        end=_LINUX_END_TRACE,
        cont=r"^(?:(?:\[[^\]]*\])+ )?\s+\S",  # indented frames, after the timestamp's one space
        max_lines=64,
        merges_after=("linux_panic",),
    ),
    _reset("linux_restart", "linux", (b"reboot: Restarting system",), r"\breboot: Restarting system"),
    # U-Boot.
    _boot(
        "uboot_spl",
        "u-boot",
        (b"U-Boot ",),  # uboot's trigger too: one literal for both rows
        r"^\s*U-Boot (?P<phase>SPL|TPL|VPL) (?P<version>\S+)",
        10,
    ),
    _boot("uboot", "u-boot", (b"U-Boot ",), r"^\s*U-Boot (?P<version>\S+) [(\[]", 20),
    Signature(
        "uboot_abort",
        "u-boot",
        "crash",
        "critical",
        (b'" handler, esr',),
        r'"(?P<reason>Synchronous Abort|SError|IRQ|FIQ|Error)" handler, esr (?P<esr>' + _HEX + ")",
        rules=_UBOOT_RULES,
        end=_UBOOT_END,
        max_lines=60,
        merges=("uboot_resetting",),
    ),
    Signature(
        "uboot_arm32_abort",
        "u-boot",
        "crash",
        "critical",
        (b"data abort", b"prefetch abort", b"undefined instruction"),
        r"^(?P<reason>data abort|prefetch abort|undefined instruction)$",
        rules=_UBOOT_RULES,
        end=_UBOOT_END,
        max_lines=60,
        merges=("uboot_resetting",),
    ),
    _reset("uboot_resetting", "u-boot", (b"resetting ...",), r"^resetting \.\.\."),
    # Zephyr (and MCUboot, nRF Connect SDK).
    _boot("zephyr_mcuboot", "zephyr", (b"*** Booting ",), r"\*\*\* Booting MCUboot (?P<version>\S+)", 20),
    _boot(
        "zephyr_mcuboot_jump",
        "zephyr",
        (b"Jumping to the first image slot", b"Bootloader chainload address offset"),
        r"\b(?:Jumping to the first image slot|Bootloader chainload address offset)",
        25,
        handoff=True,
    ),
    _boot(
        "zephyr_boot",
        "zephyr",
        (b"*** Booting ",),
        r"\*\*\* Booting (?P<what>.+?) (?:build |version )?(?P<version>\S+) \*\*\*",
        30,
    ),
    _zephyr(
        "zephyr_fault",
        (b"***** ",),
        r"\*\*\*\*\* (?P<reason>(?:[A-Z]+ )+FAULT"
        r"|[A-Z][a-z]+(?: [a-z]+)* [Ee]xception(?: \( ?-?\d+\))?) \*\*\*\*\*",
    ),
    _zephyr("zephyr_riscv_fault", (b"mcause: ",), r"\bmcause: (?P<mcause>\d+), (?P<reason>.+)"),
    _zephyr("zephyr_assert", (b"ASSERTION FAIL",), r"(?P<reason>\bASSERTION FAIL.*)"),
    _zephyr(
        "zephyr_fatal",
        (b">>> ZEPHYR FATAL ERROR",),
        r">>> ZEPHYR FATAL ERROR (?P<fatal_error>(?P<code>\d+): (?P<reason>.+?))(?: on CPU (?P<cpu>\d+))?$",
    ),
    # nRF Connect SDK's lib/fatal_error (and applications that reset on a fatal error): "Resetting system"
    _reset(
        "zephyr_resetting",
        "zephyr",
        (b"Resetting system",),
        r"(?:^|: )Resetting system$",
        reason="fatal error",
    ),
    *CORTEX_M_SIGNATURES,  # CmBacktrace, Mbed OS, FreeRTOS asserts (signatures_cortex_m.py)
    # MicroPython (CPython's tracebacks look the same and are found too).
    _boot(
        "mpy_banner",
        "micropython",
        (b"MicroPython ",),
        r"^(?:>>> )?MicroPython (?P<version>v?\S+) on (?P<date>\d{4}-\d{2}-\d{2}); (?P<board>.+)$",
        50,
    ),
    _reset("mpy_soft_reboot", "micropython", (b"MPY: soft reboot",), r"\bMPY: soft reboot"),
    Signature(
        "mpy_traceback",
        "micropython",
        "crash",
        "error",
        (b"Traceback (most recent call last)",),
        r"^Traceback \(most recent call last\):",
        rules=(r'^\s+(?P<frame>File ".*)',),
        end=r"^(?P<reason>\S.*)$",
        max_lines=64,
        mild=r"^(?:KeyboardInterrupt|SystemExit)\b",
        resumes=r"^>>>",  # the REPL's prompt came back: the program went on (an exception, not a crash)
    ),
    # PC firmware (QEMU's default BIOS).
    _boot("seabios", "bios", (b"SeaBIOS (version",), r"SeaBIOS \(version (?P<version>[^)]+)\)", 1),
)
