"""The signature rows of Cortex-M fault reporters that are libraries rather than an OS's own dump:
CmBacktrace, the Mbed OS fault handler and error report, FreeRTOS's ``configASSERT`` (issue 38.2). Each
pattern is the project's own string, read in its sources; :mod:`.signatures` places these rows in its table
(the module docstring there says what each field means) and each is tested on a real report from QEMU
firmware (``tests/firmware/cortex_m``).
"""

from __future__ import annotations

from serial_mcp.core.events.model import Signature

# CmBacktrace (armink/CmBacktrace: cm_backtrace.c, its en-US strings): the head says where the fault ran; the
# registers, the diagnosis and the call stack follow; the stack dump between them is not counted.
_CMB_RULES = (
    r"\bLR : (?P<lr>[0-9a-fA-F]{8})\s+PC : (?P<pc>[0-9a-fA-F]{8})",
    r"^(?P<reason>(?:Hard|Memory management|Bus|Usage|Debug) fault is caused by .+)",
    r"^(?P<reason>Error: (?:Main|Thread) stack\([0-9a-fA-F]+\) was overflow)",
    r"^The (?:memory management|bus) fault occurred address is (?P<fault_address>[0-9a-fA-F]{8})",
)
_CMB_END = (
    r"^Show more call stack info by run: addr2line -e (?P<elf_file>\S+)(?: -\w+)+"
    r" (?P<calls>[0-9a-fA-F]{8}(?: [0-9a-fA-F]{8})*)|^Dump call stack has an error"
)
_CMB_QUIET = (r"^=+ (?:Main|Thread) stack information =+$", r"^=+$")

# Mbed OS: platform/source/TARGET_CORTEX_M/mbed_fault_handler.c, then mbed_error.c's error report.
_MBED_ERROR_END = r"^-- MbedOS Error Info --"


CORTEX_M_SIGNATURES: tuple[Signature, ...] = (
    # CmBacktrace.
    Signature(
        "cmb_fault",
        "cmbacktrace",
        "crash",
        "critical",
        (b"Fault on ",),
        r"^Fault on (?:interrupt or bare metal\(no OS\) environment|thread (?P<thread>.+))$",
        reason="fault",
        rules=_CMB_RULES,
        end=_CMB_END,
        max_lines=24,
        quiet=_CMB_QUIET,
    ),
    # Mbed OS: the fault handler's context dump, then the error report it raises (one event); an error report
    # alone (MBED_ERROR, MBED_ASSERT, an RTOS error) is a crash of its own. Both halt or reboot the board.
    Signature(
        "mbed_fault",
        "mbed-os",
        "crash",
        "critical",
        (b"++ MbedOS ",),
        r"^\+\+ MbedOS Fault Handler \+\+",
        rules=(
            r"^FaultType: (?P<reason>\w+)",
            r"^PC\s+: (?P<pc>[0-9A-Fa-f]{8})",
            r"^LR\s+: (?P<lr>[0-9A-Fa-f]{8})",
            r"^(?P<fault_register>MMFAR|BFAR)\s*: (?P<fault_address>[0-9A-Fa-f]{8})",
        ),
        end=_MBED_ERROR_END,
        max_lines=60,
        merges=("mbed_error",),
    ),
    Signature(
        "mbed_error",
        "mbed-os",
        "crash",
        "critical",
        (b"++ MbedOS ",),
        r"^\+\+ MbedOS Error Info \+\+",
        rules=(
            r"^Error Status: (?P<error_status>0x[0-9A-Fa-f]+)",
            r"^Error Message: (?P<reason>.+)",
            r"^Location: (?P<caller>0x[0-9A-Fa-f]+)",  # the return address of the mbed_error() call
            r"^File: ?(?P<file>.+)",
        ),
        end=_MBED_ERROR_END,
        max_lines=40,
    ),
    # FreeRTOS: the demos' vAssertCalled (configASSERT) prints the file and line, no address, and spins.
    Signature(
        "freertos_assert",
        "freertos",
        "crash",
        "critical",
        (b"ASSERT! Line ",),
        r"^ASSERT! Line (?P<line>\d+), file (?P<file>.+?)(?:, GetLastError\(\) -?\d+)?$",
        reason="configASSERT failed",
    ),
)
