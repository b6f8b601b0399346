"""PtyMirror: a PTY that shows a connection's RX live, so a person can watch (picocom, tio, screen)
while the agent works; in ``rw`` mode what the person types goes to the device and into the log.

RX is copied from the pump thread with a non-blocking write: a viewer that does not read (or no
viewer at all) never slows the pump; what the PTY could not take is counted in ``dropped``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from typing import Literal

from serial_mcp.core.eventlog import LogEvent
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.raw_pty import open_raw_pty, wait_readable

log = logging.getLogger(__name__)

MirrorMode = Literal["ro", "rw"]


class PtyMirror:
    """One mirror PTY for one connection. ``path`` is what the person opens."""

    def __init__(self, conn: Connection, mode: MirrorMode) -> None:
        self.conn = conn
        self.mode = mode
        self.master, self._slave, self.path = open_raw_pty()
        os.fchmod(self._slave, 0o600)  # like ``mesg n``: group tty (write, wall) cannot type to the device
        self.rdev = os.fstat(self._slave).st_rdev  # an open of this device is refused (engine.mirroring)
        self.dropped = 0
        self._stop_r, self._stop_w = os.pipe()
        self._thread: threading.Thread | None = None
        conn.listeners.append(self.on_event)
        if mode == "rw":
            self._thread = threading.Thread(target=self._from_person, name=f"mirror-{conn.id}", daemon=True)
            self._thread.start()

    def on_event(self, event: LogEvent, payload: bytes | None) -> None:
        """Connection listener (pump thread, lock held): copy RX to the PTY, never block."""
        if event.type != "rx" or not payload:
            return
        try:
            n = os.write(self.master, payload)
        except (BlockingIOError, OSError):
            n = 0
        self.dropped += len(payload) - n

    def _from_person(self) -> None:
        while True:
            if not wait_readable(self.master, self._stop_r):
                return
            try:
                data = os.read(self.master, 4096)
            except BlockingIOError:
                continue
            except OSError:
                return
            if not data:
                return
            if self.conn.state != "open":
                continue
            try:
                self.conn.send_now(data, source="mirror")
            except OSError as exc:
                log.info("mirror write to %s failed: %s", self.conn.id, exc)

    def close(self) -> None:
        self.conn.remove_listener(self.on_event)
        with contextlib.suppress(OSError):
            os.write(self._stop_w, b"x")
        if self._thread is not None:
            self._thread.join(2)
        for fd in (self.master, self._slave, self._stop_r, self._stop_w):
            with contextlib.suppress(OSError):
                os.close(fd)
