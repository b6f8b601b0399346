"""What a test may leave behind: threads still running and PTY fds still open.

tests/conftest.py checks both after every test; a fixture that outlives its tests (a module's one server)
checks its own threads with ``threads_left`` when it ends. A thread told to stop gets ``LEAK_GRACE_S`` to
end: it is joined (woken the moment it ends), never slept for.
"""

from __future__ import annotations

import os
import threading
import time

LEAK_GRACE_S = 5.0  # seconds a stopping thread gets to end before it counts as leaked
_FD_DIR = "/proc/self/fd"


def open_pty_fds() -> set[tuple[int, str]]:
    """(fd, target) of every PTY fd this process holds (empty where /proc is missing)."""
    found: set[tuple[int, str]] = set()
    try:
        names = os.listdir(_FD_DIR)
    except OSError:
        return found
    for name in names:
        try:
            target = os.readlink(f"{_FD_DIR}/{name}")
        except OSError:  # the fd of the listing itself, already closed
            continue
        if target in ("/dev/ptmx", "/dev/pts/ptmx") or target.startswith("/dev/pts/"):
            found.add((int(name), target))
    return found


def threads_left(before: set[threading.Thread], grace: float = LEAK_GRACE_S) -> list[threading.Thread]:
    """Threads started since ``before`` that are still alive after each was joined within ``grace``."""
    deadline = time.monotonic() + grace
    left: list[threading.Thread] = []
    for t in threading.enumerate():
        if t in before or t is threading.current_thread():
            continue
        t.join(max(0.0, deadline - time.monotonic()))
        if t.is_alive():
            left.append(t)
    return left


def describe(threads: list[threading.Thread], ptys: list[tuple[int, str]]) -> str | None:
    """One line naming what leaked, or None."""
    problems = []
    if threads:
        problems.append("threads still running: " + ", ".join(sorted(t.name for t in threads)))
    if ptys:
        problems.append("PTY fds still open: " + ", ".join(f"{fd} → {target}" for fd, target in ptys))
    return "; ".join(problems) or None
