"""A raw PTY pair, and the wait on its master that a stop pipe ends (the mirror and the PTY bridge)."""

from __future__ import annotations

import os
import select
import tty


def open_raw_pty() -> tuple[int, int, str]:
    """``(master, slave, path)`` of a new PTY: both ends raw, the master non-blocking."""
    master, slave = os.openpty()
    tty.setraw(master)
    tty.setraw(slave)
    os.set_blocking(master, False)
    return master, slave, os.ttyname(slave)


def wait_readable(fd: int, stop_fd: int) -> bool:
    """Block until ``fd`` can be read; False once ``stop_fd`` can (a stop) or either is closed."""
    try:
        ready, _, _ = select.select([fd, stop_fd], [], [])
    except (OSError, ValueError):
        return False
    return stop_fd not in ready
