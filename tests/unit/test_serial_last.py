"""tests/serial_last.py driven with fake xdist workers: the serial group is sent last, to one worker, only
after every other worker has finished (so an xdist upgrade that changes the scheduler's insides fails
here, not as a flaky liveness test)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tests.serial_last import SerialLastScheduling, write_serial_ids


@dataclass(eq=False)
class FakeWorker:
    """What the scheduler uses of xdist's WorkerController: shutdown and the items sent."""

    name: str
    sent: list[int] = field(default_factory=list)
    shutting_down: bool = False
    gateway: Any = None

    def __post_init__(self) -> None:
        self.gateway = SimpleNamespace(id=self.name)

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


class FakeConfig:
    option = SimpleNamespace(loadscopereorder=True)

    def __init__(self, workers: int) -> None:
        self._values = {"tx": [f"{workers}*popen"], "dist": "load", "maxschedchunk": None}

    def getvalue(self, name: str) -> Any:
        return self._values[name]

    getoption = getvalue


COLLECTION = [f"tests/a.py::test_{i}" for i in range(12)]
SERIAL = {1, 3, 10}


def start(tmp_path: Path, workers: int, collection: list[str] = COLLECTION) -> tuple[SerialLastScheduling, list[FakeWorker]]:
    ids_file = tmp_path / "serial-ids.json"
    write_serial_ids(ids_file, [COLLECTION[i] for i in SERIAL], "gw0")
    sched = SerialLastScheduling(FakeConfig(workers), ids_file=ids_file)  # type: ignore[arg-type]
    nodes = [FakeWorker(f"gw{i}") for i in range(workers)]
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, collection)
    sched.schedule()
    return sched, nodes


def run_everything_sent(sched: SerialLastScheduling, node: FakeWorker, done: set[int]) -> None:
    for index in [i for i in node.sent if i not in done]:
        done.add(index)
        sched.mark_test_complete(node, index)


def test_the_serial_tests_wait_until_they_are_the_only_work_and_the_other_workers_are_gone(tmp_path: Path) -> None:
    sched, (a, b) = start(tmp_path, 2)
    assert SERIAL.isdisjoint(a.sent + b.sent), "serial tests went out with the first chunks"
    done: set[int] = set()
    while not (a.shutting_down or b.shutting_down):
        run_everything_sent(sched, a, done)
        run_everything_sent(sched, b, done)
        assert SERIAL.isdisjoint(a.sent + b.sent)
    keeper, other = (a, b) if b.shutting_down else (b, a)
    assert not keeper.shutting_down
    run_everything_sent(sched, keeper, done)
    run_everything_sent(sched, other, done)
    assert SERIAL.isdisjoint(keeper.sent), "serial tests started while another worker was running"
    assert done == set(range(len(COLLECTION))) - SERIAL
    sched.remove_node(other)  # the other worker has finished
    assert set(keeper.sent) & SERIAL == SERIAL and SERIAL.isdisjoint(other.sent)
    run_everything_sent(sched, keeper, done)
    assert done == set(range(len(COLLECTION)))
    assert sched.tests_finished and keeper.shutting_down


def test_with_only_serial_tests_one_worker_runs_them_all_once_the_other_has_gone(tmp_path: Path) -> None:
    sched, nodes = start(tmp_path, 2, [COLLECTION[i] for i in sorted(SERIAL)])
    assert not any(n.sent for n in nodes)
    (other,) = [n for n in nodes if n.shutting_down]
    sched.remove_node(other)
    (runner,) = [n for n in nodes if n.sent]
    assert sorted(runner.sent) == [0, 1, 2] and runner is not other


def test_a_kept_worker_that_dies_hands_the_serial_tests_to_one_still_running(tmp_path: Path) -> None:
    sched, nodes = start(tmp_path, 3)
    done: set[int] = set()
    while not any(n.shutting_down for n in nodes):
        for n in nodes:
            run_everything_sent(sched, n, done)
    keeper = next(n for n in nodes if not n.shutting_down)
    sched.remove_node(keeper)  # crashed before the serial group was sent
    spare = FakeWorker("gw9")  # xdist starts a replacement worker
    sched.add_node(spare)
    sched.add_node_collection(spare, COLLECTION)
    sched.schedule()
    for n in nodes:
        if n is not keeper:
            run_everything_sent(sched, n, done)
            sched.remove_node(n)
    assert set(spare.sent) >= SERIAL
