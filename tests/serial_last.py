"""Timing-sensitive tests run alone, after the parallel part of the suite, in the same pytest run.

Under xdist (``-n auto`` in pyproject's addopts, ``--dist load``), ``SerialLastScheduling`` is xdist's
load scheduler with one change: the tests marked ``serial`` are held back until they are all that is left;
then every worker but one is shut down, and they are sent to the one left only once the others have
finished. So a liveness bound, a firmware boot under QEMU or a reclaim deadline is measured with no other
test on the machine's cores, and README's one ``python3 -m pytest`` stays the whole suite.

Which tests are ``serial`` is known where they are collected, in the workers; the controller that
schedules only sees node ids. xdist's own side channel for that (``--dist loadgroup`` appending
``@group`` to node ids) silently does nothing on pytest 9.2 (pytest-xdist issue 1386), so the workers
write the ids to a file whose path the controller hands them in ``workerinput`` (``pytest_configure_node``).

Built on ``LoadScheduling``'s attributes (``pending``, ``node2pending``, ``node2collection``):
tests/unit/test_serial_last.py drives it with fake workers, so an xdist upgrade that changes them fails
there, not as a flaky timing test.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadScheduling  # type: ignore[import-untyped]

WORKERINPUT_KEY = "serial_last_ids_file"


class SerialLastScheduling(LoadScheduling):  # type: ignore[misc]  # xdist ships no type information
    """LoadScheduling, but the ``serial`` tests run last, on one worker, with no other worker running."""

    def __init__(self, config: pytest.Config, log: Any = None, *, ids_file: Path) -> None:
        super().__init__(config, log)
        self._ids_file = ids_file
        self._serial: set[int] = set()  # collection indices of the serial tests
        self._keeper: Any = None  # the worker kept to run them

    def schedule(self) -> None:
        if self.collection is None and self.collection_is_completed:
            ids = set(read_serial_ids(self._ids_file))
            collection = next(iter(self.node2collection.values()))
            self._serial = {i for i, nodeid in enumerate(collection) if nodeid in ids}
        super().schedule()

    def _send_tests(self, node: Any, num: int) -> None:
        parallel = [i for i in self.pending if i not in self._serial]
        if parallel:
            chosen = parallel[:num]
            taken = set(chosen)
            self.pending[:] = [i for i in self.pending if i not in taken]
            self.node2pending[node].extend(chosen)
            node.send_runtest_some(chosen)
            return
        if self._keeper is None:  # only serial tests are left: keep this worker, let the others go
            self._keeper = node
            for other in self.nodes:
                if other is not node and not other.shutting_down:
                    other.shutdown()
        self._release()

    def _release(self) -> None:
        """Send the serial tests to the kept worker once it is the only worker left."""
        keeper = self._keeper
        if keeper is None or not self.pending or any(node is not keeper for node in self.node2pending):
            return
        chosen, self.pending[:] = list(self.pending), []
        self.node2pending[keeper].extend(chosen)
        keeper.send_runtest_some(chosen)

    def remove_node(self, node: Any) -> str | None:
        crashed: str | None = super().remove_node(node)
        if node is self._keeper:
            self._keeper = None
        if self._keeper is None and self.pending and self._serial.issuperset(self.pending):
            for other in self.nodes:  # a new keeper, if any worker is left to be one
                if not other.shutting_down:
                    self._send_tests(other, len(self.pending))
                    break
        self._release()
        return crashed


def write_serial_ids(path: Path, ids: Iterable[str], worker: str) -> None:
    """Write the node ids atomically (every worker writes the same list)."""
    tmp = path.with_name(f"{path.name}.{worker}")
    tmp.write_text(json.dumps(sorted(ids)))
    os.replace(tmp, path)


def read_serial_ids(path: Path) -> list[str]:
    try:
        ids: list[str] = json.loads(path.read_text())
    except FileNotFoundError:  # no worker collected a serial test
        return []
    return ids


class SerialLastPlugin:
    """Registered by tests/conftest.py in the xdist controller: picks the scheduler for ``--dist load``."""

    def __init__(self) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="serial-last-"))
        self.ids_file = self._dir / "serial-ids.json"

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[WORKERINPUT_KEY] = str(self.ids_file)

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> SerialLastScheduling | None:
        if config.getvalue("dist") != "load":
            return None
        return SerialLastScheduling(config, log, ids_file=self.ids_file)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)
