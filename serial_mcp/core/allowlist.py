"""Allowlist patterns for ports: parsed strictly at startup, matched on every open (fail closed).

Patterns: a path glob (``/dev/ttyUSB*``, ``/dev/serial/by-id/usb-FTDI_*``), a URL glob
(``socket://10.0.0.5:*``, ``sim://*``, ``replay://*``) or a USB identity ``usb:VID:PID`` /
``usb:VID:PID:SERIAL`` (hex ids). A bad pattern is an error, never "allow everything".
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

from serial_mcp import messages
from serial_mcp.errors import InvalidArgument

_USB = re.compile(r"usb:([0-9a-fA-F]{4}):([0-9a-fA-F]{4})(?::(\S+))?")
_URL = re.compile(r"[a-z][a-z0-9+.-]*://\S*")


@dataclass(frozen=True, slots=True)
class Pattern:
    kind: str  # "path" | "url" | "usb"
    text: str
    vid: str | None = None
    pid: str | None = None
    serial: str | None = None


@dataclass(frozen=True, slots=True)
class PortFacts:
    """What an open is judged on: the name asked for, its resolved real path, USB identity if any."""

    name: str
    real_path: str | None
    vid: str | None = None
    pid: str | None = None
    serial_number: str | None = None
    expanded: frozenset[str] = frozenset()  # real paths that the path patterns' current matches resolve to


def parse_pattern(text: str) -> Pattern:
    raw = text.strip()
    if not raw:
        raise InvalidArgument(messages.ALLOW_EMPTY)
    if raw.lower().startswith("usb:"):
        m = _USB.fullmatch(raw)
        if not m:
            raise InvalidArgument(messages.ALLOW_BAD_USB.format(pattern=raw))
        return Pattern("usb", raw, m.group(1).lower(), m.group(2).lower(), m.group(3))
    if "://" in raw:
        if not _URL.fullmatch(raw):
            raise InvalidArgument(messages.ALLOW_BAD.format(pattern=raw))
        _check_glob(raw)
        return Pattern("url", raw)
    if not (raw.startswith("/") or re.fullmatch(r"COM[0-9*?]+", raw, re.IGNORECASE)):
        raise InvalidArgument(messages.ALLOW_BAD.format(pattern=raw))
    _check_glob(raw)
    return Pattern("path", raw)


def _check_glob(raw: str) -> None:
    if raw.count("[") != raw.count("]"):
        raise InvalidArgument(messages.ALLOW_BAD.format(pattern=raw))
    try:
        re.compile(fnmatch.translate(raw))
    except re.error:
        raise InvalidArgument(messages.ALLOW_BAD.format(pattern=raw)) from None


def parse_allowlist(items: list[str]) -> list[Pattern]:
    """Every pattern or an error; an empty list given on purpose is an error too (it would allow nothing
    by accident of typing, or everything by accident of code)."""
    patterns = [parse_pattern(item) for item in items]
    if not patterns:
        raise InvalidArgument(messages.ALLOW_EMPTY)
    return patterns


def allowed(patterns: list[Pattern], facts: PortFacts) -> bool:
    """True when some pattern admits the port. Paths are judged by their resolved real path, so a
    symlink cannot smuggle in a device the list does not name."""
    return any(_admits(p, facts) for p in patterns)


def _admits(p: Pattern, facts: PortFacts) -> bool:
    if p.kind == "url":
        return "://" in facts.name and fnmatch.fnmatchcase(facts.name, p.text)
    if p.kind == "path":
        real = facts.real_path
        return real is not None and (fnmatch.fnmatchcase(real, p.text) or real in facts.expanded)
    return facts.vid == p.vid and facts.pid == p.pid and (p.serial is None or facts.serial_number == p.serial)
