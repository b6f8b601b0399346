"""Issue 39's bench tasks (bench/bench_tasks.py) run in-process, clocks x0.2: every fast task's answer
is right on today's paths and on the one-call paths, and the table prints the calls counted. Task 11
(esptool in a child process) is the bench's ``--with-esptool`` only."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

BENCH = Path(__file__).resolve().parents[2] / "bench"
TODAY = {"1": 2, "2": 2, "3": 2, "4": 3, "5": 2, "6": 2, "7": 2, "8": 2, "9": 2, "10": 2, "12": 1}
ONE_CALL = {**dict.fromkeys(("1", "2", "3", "5", "6", "7", "8", "9"), 1), "4": 3, "10": 2, "12": 1}


def bench() -> ModuleType:
    """bench/bench_tasks.py (bench/ is no package); sys.path as it was afterwards."""
    saved = list(sys.path)
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module("bench_tasks")
    finally:
        sys.path[:] = saved


def check(rows: list[Any], expected_calls: dict[str, int]) -> None:
    module = bench()
    by_task = {r.task.split()[0]: r for r in rows}
    for number, calls in expected_calls.items():
        row = by_task[number]
        assert row.verdict == "right", row
        assert row.calls == calls, row
    assert by_task["11"].verdict == "not run (--with-esptool)"
    printed = module.table(rows, "title").splitlines()
    for row in rows:
        assert any(
            line.startswith(row.task) and f" {row.calls:>5} {row.text:>7,}  " in line for line in printed
        )
    right = [r for r in rows if r.verdict == "right"]
    assert f" {sum(r.calls for r in right):>5} {sum(r.text for r in right):>7,}" in printed[-2]


async def test_every_fast_task_is_answered_right_on_todays_paths() -> None:
    rows = await bench().play(one_call=False, latency_s=2.0, scale=0.2)
    check(rows, TODAY)


async def test_every_fast_task_is_answered_right_on_the_one_call_paths() -> None:
    rows = await bench().play(one_call=True, latency_s=2.0, scale=0.2)
    check(rows, ONE_CALL)


async def test_a_wrong_answer_is_wrong_never_done(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fact missing from what the agent read, and an agent too slow for the U-Boot countdown without
    a standing rule (the board boots Linux), are both WRONG rows, left out of the totals."""
    module = bench()
    monkeypatch.setitem(module.dev.MODEM_FACTS, "imei", "000000000000000")
    monkeypatch.setattr(module, "STOP_AUTOBOOT", [])
    rows = await module.play(one_call=False, latency_s=5.0, scale=0.2, only={"1", "2"})
    assert [r.verdict[:6] for r in rows] == ["WRONG:", "WRONG:"], rows
    assert "000000000000000" in rows[0].verdict and "booted Linux" in rows[1].verdict
    assert " 0       0" in module.table(rows, "title").splitlines()[-2]
