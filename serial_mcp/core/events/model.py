"""What the event detector reports: one frozen :class:`Event` per boot, boot stage, reset announcement, crash
or boot loop, each pinned to the absolute offset of the first byte of the line that began it.

The kinds:

* ``boot`` — a device (re)started: a ROM banner, a bootloader or kernel banner that opens a new boot chain;
  ``reason`` is the reset reason when the banner says it (ESP ROM ``rst:0x10 (RTCWDT_RTC_RESET)``), and
  ``crash_offset`` is the offset of the crash this boot is the reset of, if one came before it;
* ``stage`` — a later stage of the same boot chain (U-Boot, then Linux; the ESP-IDF bootloader, then the app);
* ``reset`` — the firmware announces a reset it is about to do (``Rebooting...``, ``resetting ...``);
* ``crash`` — a panic, fault, watchdog, assertion or uncaught exception, with the program counter and
  backtrace addresses the dump printed (``pc``, ``backtrace``), its textual frames (``trace``: Linux
  call-trace entries, Python ``File ...`` lines) and, when the board came back up right after, the reset
  (``reset_offset``, ``reset_reason``);
* ``exception`` — a traceback after which the program went on (the REPL prompt came back with no boot in
  between): informational, its location in ``trace`` (``location()``: ``f at <stdin>:2``);
* ``boot_loop`` — ``N`` boots the firmware did to itself within a window (a reset the user caused or expected
  never counts); ``boots`` holds their offsets and ``offset`` is the first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

Kind = Literal["boot", "stage", "reset", "crash", "exception", "boot_loop"]
KINDS: tuple[Kind, ...] = ("boot", "stage", "reset", "crash", "exception", "boot_loop")

_PY_FRAME: Final = re.compile(r'^File "(?P<file>[^"]*)", line (?P<line>\d+)(?:, in (?P<fn>\S+))?')

#: ``info`` a boot or stage; ``warning`` something a developer should see but the system lives on (a kernel
#: WARNING, a reset announcement, a KeyboardInterrupt); ``error`` a program died but the system lives on (a
#: MicroPython traceback, a Linux Oops without panic, a task watchdog); ``critical`` the system is down (a
#: panic, a fault, a brownout, a boot loop).
Severity = Literal["info", "warning", "error", "critical"]
SEVERITIES: tuple[Severity, ...] = ("info", "warning", "error", "critical")


_FAULTS: Final = frozenset({"crash", "exception"})


@dataclass(frozen=True, slots=True)
class Event:
    """One detected event. Offsets are absolute stream offsets (the ring's), ``end`` is one past the last byte
    of the last line that belongs to the event; ``t`` is the time given with the bytes of its first line."""

    kind: Kind
    family: str  # "esp-rom", "esp-idf", "linux", "u-boot", "zephyr", "micropython", "bios", "user"
    signature: str  # the name of the table row that recognised it
    severity: Severity
    offset: int
    end: int
    t: float
    line: str  # the first line: ANSI escapes removed, UTF-8 (bad bytes replaced), at most MAX_TEXT characters
    reason: str | None = None
    pc: int | None = None
    backtrace: tuple[int, ...] = ()
    trace: tuple[str, ...] = ()
    detail: Mapping[str, str] = field(default_factory=dict)
    reset_offset: int | None = None  # crash: the boot that followed it
    reset_reason: str | None = None  # crash: that boot's reset reason
    crash_offset: int | None = None  # boot: the crash it is the reset of
    boots: tuple[int, ...] = ()  # boot_loop: the offsets of the boots in the window

    def summary(self) -> str:
        """One short line: ``crash at offset 10412: Guru Meditation Error (LoadProhibited)``. A crash whose
        first line does not say its reason (a Python traceback: the exception comes last) gets it added."""
        what = self.kind.replace("_", " ")
        text = f"{what} at offset {self.offset}: {self.line}"
        if self.kind in _FAULTS and self.reason and self.reason.lower() not in self.line.lower():
            text += f" {self.reason}" if self.line.endswith(":") else f" ({self.reason})"
        if self.kind == "crash" and self.reset_reason:
            text += f" → reset {self.reset_reason}"
        elif self.kind == "boot" and self.reason and self.reason not in self.line:
            text += f" ({self.reason})"
        return text

    def location(self) -> str | None:
        """Where a Python traceback says it was raised (its innermost ``File`` frame): ``f at <stdin>:2``
        (``<module>`` frames: ``<stdin>:1``); None for other events."""
        for frame in reversed(self.trace):
            m = _PY_FRAME.match(frame)
            if m is not None:
                where = f"{m['file']}:{m['line']}"
                fn = m["fn"]
                return f"{fn} at {where}" if fn and fn != "<module>" else where
        return None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; empty and None fields are left out, addresses are ``0x…`` strings."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "family": self.family,
            "signature": self.signature,
            "severity": self.severity,
            "offset": self.offset,
            "end": self.end,
            "t": self.t,
            "line": self.line,
        }
        if self.reason is not None:
            out["reason"] = self.reason
        if self.pc is not None:
            out["pc"] = f"0x{self.pc:08x}"
        if self.backtrace:
            out["backtrace"] = [f"0x{a:08x}" for a in self.backtrace]
        if self.trace:
            out["trace"] = list(self.trace)
        if self.detail:
            out["detail"] = dict(self.detail)
        for name in ("reset_offset", "reset_reason", "crash_offset"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.boots:
            out["boots"] = list(self.boots)
        return out


@dataclass(frozen=True, slots=True)
class Signature:
    """One row of the signature table; :mod:`serial_mcp.core.events.signatures` says what each field means."""

    name: str
    family: str
    kind: Kind
    severity: Severity
    triggers: tuple[bytes, ...]
    head: str
    reason: str | None = None  # the reason when no ``reason`` group says one
    rules: tuple[str, ...] = ()
    end: str | None = None
    cont: str | None = None
    max_lines: int = 0
    quiet: tuple[str, str] | None = None
    merges: tuple[str, ...] = ()
    merges_after: tuple[str, ...] = ()  # heads that reopen the block within its grace, after it ended
    grace_lines: int = 8  # critical crashes: lines to wait for the boot that is their reset
    rank: int | None = None
    handoff: bool = False
    mild: str | None = None  # a reason matching this lowers the severity to warning
    # a prompt (regex on a line, or on the unfinished line) that, coming back after the dump before any boot,
    # makes the crash an ``exception``: the program went on (Python's ``>>>``)
    resumes: str | None = None
