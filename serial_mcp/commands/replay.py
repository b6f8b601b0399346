"""``serial-mcp replay FILE``: play a capture to stdout, or behind a PTY any program can open.

Without ``--pty`` the replayed bytes themselves go to stdout, exact, and the command ends when the
recording has played through (or on Ctrl-C with ``--loop``). With ``--pty`` the PTY path is the
one line of stdout; a ``respond`` replay answers what the program writes; Ctrl-C ends it.
"""

from __future__ import annotations

import signal
from typing import Any, TextIO

from serial_mcp import messages
from serial_mcp.api import PortPolicy, ReplayMode, play_replay, replay_url, serve_pty
from serial_mcp.commands.output import announce, status


def run_replay(
    policy: PortPolicy, file: str, mode: ReplayMode, speed: float, loop: bool, pty: bool, out: TextIO
) -> int:
    """Play a capture to stdout, or into a PTY that any program can open (``--pty``); with an
    allowlist, only a capture file it admits (no device is written: read-only changes nothing)."""
    url = replay_url(file, mode, speed, loop)
    if not pty:
        playback = play_replay(url, capture_dir=policy.capture_dir, allowlist=policy.allowlist)
        _on_stop_signals(playback.stop)
        raw = out.buffer  # the replayed bytes themselves, exact

        def sink(data: bytes) -> None:
            raw.write(data)
            raw.flush()

        playback.run(sink)
        return 0
    with serve_pty(
        url,
        capture_dir=policy.capture_dir,
        allowlist=policy.allowlist,
        on_finished=lambda path: status(messages.CLI_REPLAY_DONE.format(path=path)),
    ) as bridge:
        _on_stop_signals(bridge.stop)
        announce(out, bridge.path)
        status(messages.CLI_REPLAY_PTY_READY.format(path=bridge.path, mode=mode))
        bridge.wait()  # until Ctrl-C
    if bridge.mismatch_count:
        status(messages.CLI_REPLAY_MISMATCHES.format(n=bridge.mismatch_count))
    return 0


def _on_stop_signals(stop: Any) -> None:
    def handler(signum: int, frame: Any) -> None:
        stop()

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
