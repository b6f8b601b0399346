"""URL-scheme routing: ``sim://`` to simulated devices, ``replay://`` to captures, the rest to pyserial.

Every open (each front door, each reconnect) passes ``core.port_url``'s policy here before any
opener runs: device paths, ``socket://``, ``rfc2217://``, ``loop://``, ``replay://``, ``sim://`` and the
schemes the operator enabled; anything else is ``not_allowed`` and nothing is opened. Like
pyserial's ``serial_for_url`` handlers, a new scheme is one more entry in ``schemes``.
"""

from __future__ import annotations

from pathlib import Path

from serial_mcp.core.allowlist import Pattern, replay_globs
from serial_mcp.core.port_url import parse_port
from serial_mcp.core.settings import SerialSettings
from serial_mcp.serial.handle import Opener, PortHandle
from serial_mcp.serial.labgrid_port import LabgridOpener
from serial_mcp.serial.replay import ReplayOpener
from serial_mcp.serial.replay_files import ReplayScope, real_path, replay_bases
from serial_mcp.serial.sim import SimOpener
from serial_mcp.serial.system_open import SystemOpener


class RoutingOpener:
    """Checks the port against the URL-scheme policy, then dispatches on the scheme; plain paths and
    pyserial's schemes go to the fallback, as the checked (rebuilt) URL."""

    def __init__(
        self, schemes: dict[str, Opener], fallback: Opener, enabled_schemes: frozenset[str] = frozenset()
    ) -> None:
        self.schemes = schemes
        self.fallback = fallback
        self.enabled_schemes = frozenset(enabled_schemes)

    def open(self, port: str, settings: SerialSettings) -> PortHandle:
        target = parse_port(port, self.enabled_schemes)
        opener = self.schemes.get(target.scheme) if target.scheme else None
        if opener is not None:
            return opener.open(port, settings)
        return self.fallback.open(target.open_name, settings)


def default_opener(
    capture_dir: Path | None = None,
    *,
    enabled_schemes: frozenset[str] = frozenset(),
    allowlist: list[Pattern] | None = None,
    labgrid_coordinator: str | None = None,
) -> RoutingOpener:
    """What production uses: simulated devices, replayed captures (relative names are looked up in
    the working directory, ``capture_dir`` and ``captures/``; only files there or on the allowlist's
    ``replay://`` patterns are read), and pyserial for device paths, socket://, rfc2217://, loop://
    and the ``enabled_schemes``; ``labgrid://`` places through the coordinator ``labgrid_coordinator``
    (None: ``LG_COORDINATOR``; labgrid itself is imported only when such a port is opened)."""
    replay_patterns = [p.path for p in allowlist or [] if p.kind == "replay" and p.path is not None]

    def globs() -> list[str]:
        bases = tuple(real_path(b) for b in replay_bases(capture_dir))
        return [g for path in replay_patterns for g in replay_globs(path, bases)]

    replay = ReplayOpener(capture_dir, scope=ReplayScope(capture_dir, globs))
    system = SystemOpener(enabled_schemes)
    lab = LabgridOpener(labgrid_coordinator, system)
    return RoutingOpener({"sim": SimOpener(), "replay": replay, "labgrid": lab}, system, enabled_schemes)
