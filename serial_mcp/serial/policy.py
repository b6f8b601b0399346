"""Port policy at the opener seam: the allowlist (fail closed) and friendly port resolution.

``GuardedOpener`` wraps any opener and refuses ports the allowlist does not admit — judged on the
resolved real path and the USB identity, so a symlink cannot escape it. ``resolve_port`` lets an
agent name a port by serial number, ``/dev/serial/by-id`` name or a description fragment, when
exactly one live port fits.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable

from serial_mcp import messages
from serial_mcp.core.allowlist import Pattern, PortFacts, allowed
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import SerialMcpError
from serial_mcp.serial.handle import Opener, PortHandle
from serial_mcp.serial.ports import PortInfo

BY_ID = "/dev/serial/by-id"


def _real(path: str) -> str:
    return os.path.realpath(path)


def port_facts(port: str, patterns: list[Pattern], port_lister: Callable[[], list[PortInfo]]) -> PortFacts:
    if "://" in port:
        return PortFacts(port, None)
    real = _real(port)
    info = next((p for p in port_lister() if _real(p.name) == real), None)
    expanded = frozenset(_real(m) for p in patterns if p.kind == "path" for m in glob.glob(p.text))
    return PortFacts(
        port,
        real,
        info.vid if info else None,
        info.pid if info else None,
        info.serial_number if info else None,
        expanded,
    )


class GuardedOpener:
    """Checks every open (including reconnects) against the allowlist before the inner opener runs."""

    def __init__(
        self, inner: Opener, patterns: list[Pattern], port_lister: Callable[[], list[PortInfo]]
    ) -> None:
        self.inner = inner
        self.patterns = patterns
        self.port_lister = port_lister

    def open(self, port: str, settings: SerialSettings) -> PortHandle:
        facts = port_facts(port, self.patterns, self.port_lister)
        if not allowed(self.patterns, facts):
            raise SerialMcpError(
                "not_allowed", messages.NOT_ALLOWED.format(port=port, real=facts.real_path or port)
            )
        return self.inner.open(port, settings)


def resolve_port(port: str, port_lister: Callable[[], list[PortInfo]]) -> str:
    """The device path ``port`` stands for. Paths and URLs are returned as given; otherwise a unique
    serial number, by-id name or description fragment is looked up. Ambiguity is an error."""
    if (
        "://" in port
        or os.path.exists(port)
        or port.startswith(("/", "\\\\"))
        or port.upper().startswith("COM")
    ):
        return port
    ports = port_lister()
    for pick in (
        lambda p: p.serial_number == port,
        lambda p: any(
            os.path.basename(link) == port and _real(link) == _real(p.name)
            for link in glob.glob(f"{BY_ID}/*")
        ),
        lambda p: port.lower() in " ".join(filter(None, (p.description, p.product, p.manufacturer))).lower(),
    ):
        found = [p for p in ports if pick(p)]
        if len(found) == 1:
            return found[0].name
        if len(found) > 1:
            names = ", ".join(f"{p.name} ({p.description or p.serial_number or '-'})" for p in found)
            raise SerialMcpError(
                "port_ambiguous", messages.PORT_AMBIGUOUS.format(port=port, candidates=names)
            )
    return port
