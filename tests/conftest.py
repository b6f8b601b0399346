"""Shared fixtures and the suite's rules about time.

- anyio on asyncio (the backend the MCP SDK runs on).
- ``serial`` tests (timing-sensitive: firmware in QEMU, ``tests/liveness.py`` users, and those marked)
  run alone after the parallel part (tests/serial_last.py); each is also ``slow``, so the fast lane
  ``pytest -m "not slow"`` never runs one beside another test.
- ``_no_thread_or_pty_outlives_the_test`` (autouse) fails a test that leaves a thread running or a PTY fd
  (``/dev/ptmx`` master, ``/dev/pts/N`` slave) open once its fixtures are torn down (tests/leaks.py).
  Threads and fds made by session- or module-scoped fixtures exist before the test and are not counted;
  a test marked ``threads_outlive_the_test`` (a longer-lived fixture starts threads lazily, during its
  tests) is checked for PTYs only, and that fixture checks its own threads when it ends.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests import liveness
from tests.leaks import describe, open_pty_fds, threads_left
from tests.pty.devices import PtyDevice, echo


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


@pytest.fixture
def echo_dev() -> Iterator[PtyDevice]:
    """An echoing device on a real PTY (the RFC 2217 mirror's tests, pty and security alike)."""
    dev = PtyDevice(echo).start()
    yield dev
    dev.close()


@pytest.fixture(autouse=True)
def _no_thread_or_pty_outlives_the_test(request: pytest.FixtureRequest) -> Iterator[None]:
    threads = set(threading.enumerate())
    ptys = open_pty_fds()
    yield
    shared = request.node.get_closest_marker("threads_outlive_the_test") is not None
    leaked = describe([] if shared else threads_left(threads), sorted(open_pty_fds() - ptys))
    if leaked:
        pytest.fail(f"the test leaked {leaked}", pytrace=False)
