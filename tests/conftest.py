"""Shared fixtures and the suite's rules about time.

- anyio on asyncio (the backend the MCP SDK runs on).
- ``serial`` tests (timing-sensitive: firmware in QEMU, ``tests/liveness.py`` users, and those marked)
  run alone after the parallel part (tests/serial_last.py); each is also ``slow``, so the fast lane
  ``pytest -m "not slow"`` never runs one beside another test.
- ``_no_thread_or_pty_outlives_the_test`` (autouse) fails a test that leaves a thread running or a PTY fd
  (``/dev/ptmx`` master, ``/dev/pts/N`` slave) open once its fixtures are torn down. A thread that was
  told to stop gets ``LEAK_GRACE_S`` to end: it is joined (woken the moment it ends), never slept for.
  Threads and fds made by session- or module-scoped fixtures exist before the test and are not counted.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests import liveness

LEAK_GRACE_S = 5.0  # seconds a stopping thread gets to end before the test is failed for leaking it
_FD_DIR = "/proc/self/fd"


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput"):
        from tests.serial_last import SerialLastPlugin  # the controller: it schedules the workers

        config.pluginmanager.register(SerialLastPlugin(), "serial-last")


def _uses_liveness(item: pytest.Item) -> bool:
    module: ModuleType | None = getattr(item, "module", None)
    if module is None:
        return False
    return any(v is liveness or getattr(v, "__module__", None) == liveness.__name__ for v in vars(module).values())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    serial: list[str] = []
    for item in items:
        if item.get_closest_marker("firmware") is not None or _uses_liveness(item):
            item.add_marker(pytest.mark.serial)
        if item.get_closest_marker("serial") is not None:
            item.add_marker(pytest.mark.slow)
            serial.append(item.nodeid)
    workerinput: dict[str, object] | None = getattr(config, "workerinput", None)
    if workerinput is not None:  # an xdist worker: tell the controller which tests to hold back
        from tests.serial_last import WORKERINPUT_KEY, write_serial_ids

        write_serial_ids(Path(str(workerinput[WORKERINPUT_KEY])), serial, str(workerinput["workerid"]))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


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


def threads_left(before: set[threading.Thread], grace: float) -> list[threading.Thread]:
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


@pytest.fixture(autouse=True)
def _no_thread_or_pty_outlives_the_test() -> Iterator[None]:
    threads = set(threading.enumerate())
    ptys = open_pty_fds()
    yield
    leaked_threads = threads_left(threads, LEAK_GRACE_S)
    leaked_ptys = sorted(open_pty_fds() - ptys)
    problems = []
    if leaked_threads:
        problems.append("threads still running: " + ", ".join(sorted(t.name for t in leaked_threads)))
    if leaked_ptys:
        problems.append("PTY fds still open: " + ", ".join(f"{fd} → {target}" for fd, target in leaked_ptys))
    if problems:
        pytest.fail("the test leaked " + "; ".join(problems), pytrace=False)
