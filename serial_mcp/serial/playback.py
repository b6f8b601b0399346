"""Playback: a replayed capture's bytes copied to a sink (``serial-mcp replay`` without ``--pty``).

``run`` blocks, copying what the replay makes due to ``sink`` until the recording has played
through (unless it loops) or ``stop`` is called — from a signal handler, say: it wakes the blocked
read at once. The end is checked before each read: a replay that has delivered everything would
otherwise block on a read that nothing will ever answer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from serial_mcp.serial.replay import ReplayPortHandle


class Playback:
    def __init__(self, handle: ReplayPortHandle) -> None:
        self.handle = handle
        self._stop = threading.Event()

    def run(self, sink: Callable[[bytes], None]) -> None:
        h = self.handle
        try:
            while not self._stop.is_set() and not self.played_through():
                data = h.read_chunk()
                if data:
                    sink(data)
        finally:
            h.close()

    def played_through(self) -> bool:
        h = self.handle
        return not h.spec.loop and h.finished.is_set() and not h.due_bytes()

    def stop(self) -> None:
        """End ``run`` promptly. Safe from a signal handler."""
        self._stop.set()
        self.handle.interrupt()
