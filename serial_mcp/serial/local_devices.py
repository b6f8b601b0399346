"""Devices for a person's own programs and tests, no engine needed: ``sim://`` devices and replays
served on a PTY (``replay --pty``, the pytest fixtures), a replay's bytes played into a sink of
your own, and the opener behind them. ``serial_mcp.api`` re-exports these (its public face).
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path

from serial_mcp.core.settings import SerialSettings
from serial_mcp.serial.openers import RoutingOpener
from serial_mcp.serial.playback import Playback
from serial_mcp.serial.policy import GuardedOpener, PortPolicy, policy_opener
from serial_mcp.serial.ports import list_system_ports
from serial_mcp.serial.pty_bridge import PtyBridge
from serial_mcp.serial.replay import ReplayMode, ReplayOpener
from serial_mcp.serial.sim import SimOpener
from serial_mcp.serial.system_open import SystemOpener


def replay_url(
    file: str | os.PathLike[str], mode: ReplayMode = "timed", speed: float = 1.0, loop: bool = False
) -> str:
    """The ``replay://`` URL of a capture file (any characters in its path kept exactly)."""
    path = urllib.parse.quote(os.fspath(file), safe="/")
    return f"replay://{path}?mode={mode}&speed={speed}&loop={'true' if loop else 'false'}"


def local_opener(capture_dir: Path | str | None = None) -> RoutingOpener:
    """An opener for a person's own programs and tests (``Engine(opener=local_opener())``):
    ``sim://`` devices, replays of any file they name (relative names from the working directory,
    then ``capture_dir`` or ``captures/``; the server confines replays, this does not), real ports."""
    directory = Path(capture_dir) if capture_dir is not None else None
    return RoutingOpener({"sim": SimOpener(), "replay": ReplayOpener(directory)}, SystemOpener())


def serve_pty(
    port: str,
    *,
    capture_dir: Path | str | None = None,
    on_finished: Callable[[str], None] | None = None,
    allowlist: Sequence[str] | None = None,
) -> PtyBridge:
    """Serve ``port`` (``sim://modem``, ``replay://boot.jsonl?mode=respond`` …) on a new PTY, raw:
    open ``bridge.path`` from the program under test; ``bridge.close()`` ends it. Playing starts
    when a program first opens the PTY; ``on_finished(path)`` runs when a replay has played through.
    With an ``allowlist``, only what it admits is served (as ``Engine(allowlist=…)`` opens)."""
    policy = PortPolicy.of(allowlist=allowlist, capture_dir=capture_dir)
    opener = policy_opener(policy, inner=local_opener(capture_dir))
    handle = opener.open(port, SerialSettings())
    return PtyBridge(handle, on_finished).start()


def play_replay(
    url: str, *, capture_dir: Path | str | None = None, allowlist: Sequence[str] | None = None
) -> Playback:
    """A ``replay://`` URL's bytes for a sink of your own: ``play_replay(url).run(write)``. With an
    ``allowlist``, only a capture file it admits is played."""
    policy = PortPolicy.of(allowlist=allowlist, capture_dir=capture_dir)
    patterns = policy.patterns()
    if patterns is not None:
        guard = GuardedOpener(
            ReplayOpener(policy.capture_dir), patterns, list_system_ports, capture_dir=policy.capture_dir
        )
        url = guard.judge(url)
    return Playback(ReplayOpener(policy.capture_dir).open(url, SerialSettings()))
