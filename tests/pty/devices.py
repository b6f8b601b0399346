"""Device simulators on the far (master) side of a real PTY pair.

The product opens the slave path through its production opener, exactly as it would open
/dev/ttyUSB0; these simulators play the device. Each runs one thread that blocks in select on the
master fd and a stop pipe (no polling).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
import tty
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from serial_mcp import Engine
    from serial_mcp.serial.connection import Connection

Handler = Callable[[bytes], bytes | None]


class PtyDevice:
    """A PTY pair whose master side is driven by ``handler`` (bytes from the host → reply bytes)."""

    def __init__(self, handler: Handler | None = None) -> None:
        self.master, self._slave = os.openpty()
        tty.setraw(self.master)
        tty.setraw(self._slave)
        self.path = os.ttyname(self._slave)
        self.handler = handler
        self.received = bytearray()
        self._stop_r, self._stop_w = os.pipe()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._write_lock = threading.Lock()

    def start(self) -> PtyDevice:
        self._thread = threading.Thread(target=self._run, name=f"pty-device-{self.path}", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while True:
            try:
                ready, _, _ = select.select([self.master, self._stop_r], [], [])
            except (OSError, ValueError):
                return
            if self._stop_r in ready:
                return
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.received += data
            reply = self.handler(data) if self.handler else None
            if reply:
                self.send(reply)

    def send(self, data: bytes) -> None:
        """Write ``data`` to the host, all of it (blocking while the PTY buffer is full)."""
        with self._write_lock:
            view = memoryview(data)
            while view:
                n = os.write(self.master, view)
                view = view[n:]

    def unplug(self) -> None:
        """Close the far end: the host side now gets EIO/EOF, like a USB adapter pulled out."""
        if self._closed:
            return
        self._closed = True
        os.write(self._stop_w, b"x")
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5)
        os.close(self.master)

    def close(self) -> None:
        self.unplug()
        for fd in (self._slave, self._stop_r, self._stop_w):
            try:
                os.close(fd)
            except OSError:
                pass


def echo(data: bytes) -> bytes:
    return data


class AtResponder:
    """Answers each CR-terminated command: AT → OK, AT+ECHO=x → x, anything else → ERROR."""

    def __init__(self) -> None:
        self._line = bytearray()
        self.commands: list[bytes] = []

    def __call__(self, data: bytes) -> bytes | None:
        out = bytearray()
        for b in data:
            if b == 0x0D:
                cmd = bytes(self._line)
                self._line.clear()
                self.commands.append(cmd)
                if cmd == b"AT":
                    out += b"\r\nOK\r\n"
                elif cmd.startswith(b"AT+ECHO="):
                    out += b"\r\n" + cmd[8:] + b"\r\nOK\r\n"
                else:
                    out += b"\r\nERROR\r\n"
            elif b != 0x0A:
                self._line.append(b)
        return bytes(out) or None


def inner(eng: Engine, cid: str) -> Connection:
    """The engine's connection behind the id ``cid`` (for tests that look inside)."""
    return eng.services.manager.get(cid)


def interrupt_once_file_holds(proc: subprocess.Popen[bytes], path: Path, needle: bytes, failure: str) -> None:
    """Ctrl-C a CLI recorder once ``path`` holds ``needle``, and expect a clean exit. Another
    process's file offers no event to wait on: it is watched, bounded (30 s, or the process ending)."""
    deadline = time.monotonic() + 30
    while not (path.exists() and needle in path.read_bytes()):
        if time.monotonic() > deadline or proc.poll() is not None:
            pytest.fail(failure)
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 0
