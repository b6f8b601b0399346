"""Allowlist patterns for ports: parsed strictly at startup, matched on every open (fail closed).

Patterns: a path glob (``/dev/ttyUSB*``, ``/dev/serial/by-id/usb-FTDI_*``), a network glob
(``socket://10.0.0.5:*``), a ``replay://`` path glob, another URL glob (``sim://*``) or a USB identity
``usb:VID:PID`` / ``usb:VID:PID:SERIAL`` (hex ids). A bad pattern is an error, never "allow everything".

What is judged are facts, not the string the agent typed:

- device paths: the resolved real path (a symlink cannot smuggle in a device the list does not name);
- ``socket://`` / ``rfc2217://``: the host and port pyserial will connect to (parsed as pyserial
  parses them; a ``user@`` part is refused before this). A host glob of digits and dots admits only
  IPv4 addresses written plainly, so ``192.168.1.*`` cannot admit ``192.168.1.1.evil.example``;
- ``replay://``: the capture file's normalised real path; a relative pattern is taken relative to
  the places a relative replay name is looked up (``PortFacts.bases``).
"""

from __future__ import annotations

import fnmatch
import ipaddress
import os.path
import re
from dataclasses import dataclass

from serial_mcp import messages
from serial_mcp.core.port_url import NETWORK_SCHEMES
from serial_mcp.errors import InvalidArgument

_USB = re.compile(r"usb:([0-9a-fA-F]{4}):([0-9a-fA-F]{4})(?::(\S+))?")
_URL = re.compile(r"[a-z][a-z0-9+.-]*://\S*")
_NET = re.compile(r"([a-z0-9]+)://(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9_.*?-]+)):([0-9*?]+)")
_IPV4_GLOB = re.compile(r"[0-9.*?]+")
REPLAY = "replay"


@dataclass(frozen=True, slots=True)
class Pattern:
    kind: str  # "path" | "url" | "usb" | "net" | "replay"
    text: str
    vid: str | None = None
    pid: str | None = None
    serial: str | None = None
    scheme: str | None = None  # net, replay, url
    host: str | None = None  # net: a host glob (lower case) or an exact IPv6 address
    port: str | None = None  # net: a port glob
    path: str | None = None  # replay: the path glob as written
    ipv6: bool = False  # net: ``host`` is an exact IPv6 address, not a glob


@dataclass(frozen=True, slots=True)
class PortFacts:
    """What an open is judged on: the name asked for, its scheme (None: a device path), the resolved
    real path (device or capture file), the host and port of a network URL, USB identity if any."""

    name: str
    real_path: str | None
    vid: str | None = None
    pid: str | None = None
    serial_number: str | None = None
    expanded: frozenset[str] = frozenset()  # real paths that the path patterns' current matches resolve to
    scheme: str | None = None
    host: str | None = None
    port: int | None = None
    bases: tuple[str, ...] = ()  # replay: real directories a relative name (and pattern) is taken from


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
        scheme, _, rest = raw.partition("://")
        if scheme in NETWORK_SCHEMES:
            return _network_pattern(raw)
        if scheme == REPLAY:
            return Pattern("replay", raw, scheme=scheme, path=rest.partition("?")[0])
        return Pattern("url", raw, scheme=scheme)
    if not (raw.startswith("/") or re.fullmatch(r"COM[0-9*?]+", raw, re.IGNORECASE)):
        raise InvalidArgument(messages.ALLOW_BAD.format(pattern=raw))
    _check_glob(raw)
    return Pattern("path", raw)


def _network_pattern(raw: str) -> Pattern:
    m = _NET.fullmatch(raw)
    if not m:
        raise InvalidArgument(messages.ALLOW_BAD_NET.format(pattern=raw))
    scheme, v6, host, port = m.groups()
    if v6 is not None:
        try:
            host = ipaddress.IPv6Address(v6).compressed
        except ValueError:
            raise InvalidArgument(messages.ALLOW_BAD_NET.format(pattern=raw)) from None
        return Pattern("net", raw, scheme=scheme, host=host, port=port, ipv6=True)
    return Pattern("net", raw, scheme=scheme, host=host.lower(), port=port)


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
    """True when some pattern admits the port (judged on the facts, see the module docstring)."""
    return any(_admits(p, facts) for p in patterns)


def replay_globs(pattern_path: str, bases: tuple[str, ...]) -> list[str]:
    """The real-path globs a ``replay://`` pattern path stands for: itself when absolute, otherwise
    joined to each base directory; normalised, so ``..`` in a pattern cannot widen it unseen."""
    if pattern_path.startswith("/"):
        return [os.path.normpath(pattern_path)]
    return [os.path.normpath(os.path.join(base, pattern_path)) for base in bases]


def _admits(p: Pattern, facts: PortFacts) -> bool:
    if p.kind == "net":
        return facts.scheme == p.scheme and _host_port_match(p, facts)
    if p.kind == "replay":
        real = facts.real_path
        if facts.scheme != REPLAY or real is None or p.path is None:
            return False
        return any(fnmatch.fnmatchcase(real, g) for g in replay_globs(p.path, facts.bases))
    if p.kind == "url":
        return facts.scheme == p.scheme and fnmatch.fnmatchcase(facts.name, p.text)
    if facts.scheme is not None:  # path and USB patterns judge device paths only
        return False
    if p.kind == "path":
        real = facts.real_path
        return real is not None and (fnmatch.fnmatchcase(real, p.text) or real in facts.expanded)
    return facts.vid == p.vid and facts.pid == p.pid and (p.serial is None or facts.serial_number == p.serial)


def _host_port_match(p: Pattern, facts: PortFacts) -> bool:
    host, port = facts.host, facts.port
    if host is None or port is None or p.host is None or p.port is None:
        return False
    if not fnmatch.fnmatchcase(str(port), p.port):
        return False
    if p.ipv6:
        return host == p.host
    if _IPV4_GLOB.fullmatch(p.host):  # an address glob admits addresses only, written plainly
        try:
            if str(ipaddress.IPv4Address(host)) != host:
                return False
        except ValueError:
            return False
    return fnmatch.fnmatchcase(host, p.host)
