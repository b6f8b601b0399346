"""URL-scheme routing: ``sim://`` to simulated devices, everything else to pyserial.

Like pyserial's ``serial_for_url`` handlers, a new scheme (``replay://``) is one more entry here.
"""

from __future__ import annotations

from pathlib import Path

from serial_mcp.core.settings import SerialSettings
from serial_mcp.serial.handle import Opener, PortHandle
from serial_mcp.serial.replay import ReplayOpener
from serial_mcp.serial.sim import SimOpener
from serial_mcp.serial.system import SystemOpener


class RoutingOpener:
    """Dispatches on the URL scheme; unknown schemes and plain paths go to the fallback."""

    def __init__(self, schemes: dict[str, Opener], fallback: Opener) -> None:
        self.schemes = schemes
        self.fallback = fallback

    def open(self, port: str, settings: SerialSettings) -> PortHandle:
        scheme, sep, _ = port.partition("://")
        opener = self.schemes.get(scheme.lower()) if sep else None
        return (opener or self.fallback).open(port, settings)


def default_opener(capture_dir: Path | None = None) -> RoutingOpener:
    """What production uses: simulated devices, replayed captures (relative names are looked up in
    the working directory, then ``capture_dir`` or ``captures/``), and every pyserial URL and path."""
    return RoutingOpener({"sim": SimOpener(), "replay": ReplayOpener(capture_dir)}, SystemOpener())
