"""ProfileStore across processes: 8 writers x 100 mutations lose nothing, the file always parses,
no temp file survives, and a writer SIGKILLed between temp write and rename changes nothing.

Workers run under ``spawn`` (a fresh interpreter each, like separate serial-mcp servers).
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import sys
import time
import tomllib
import traceback
from pathlib import Path
from typing import Any

import pytest

from serial_mcp.core.profile_model import HISTORY_LIMIT
from serial_mcp.errors import SerialMcpError
from serial_mcp.store.profiles import ProfileStore

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # eight processes, hundreds of locked writes

N_PROCS = 8
SHARED = "shared"
SHARED_START = 1000
N_SHARED = 40  # CAS-with-retry increments of the shared counter, per process
N_OWN = 39  # updates of the process's own profile (must never conflict)
N_EPHEMERAL = 10  # create + delete pairs
OPS_PER_PROC = 1 + N_SHARED + N_OWN + 2 * N_EPHEMERAL  # the own profile's create comes first
assert OPS_PER_PROC == 100


def _worker(path: str, index: int, barrier: Any, out: Any) -> None:
    """One "server": a shuffled mix of creates, CAS updates (with retry) and deletes."""
    try:
        store = ProfileStore(path, lock_timeout=60)
        plan = ["shared"] * N_SHARED + ["own"] * N_OWN + ["ephemeral"] * N_EPHEMERAL
        random.Random(index).shuffle(plan)
        own = f"own-{index}"
        barrier.wait(timeout=60)
        created = store.create(own, {"serial_number": own}, {"baud_rate": 1})
        mutations, conflicts = 1, 0
        own_rev, own_value, eph = created.revision, 1, 0
        for step in plan:
            if step == "shared":
                while True:
                    current = store.get(SHARED)
                    assert current is not None
                    try:
                        store.update(
                            SHARED,
                            expected_revision=current.revision,
                            defaults={"baud_rate": current.defaults["baud_rate"] + 1},
                        )
                        break
                    except SerialMcpError as exc:
                        if exc.code != "revision_conflict":
                            raise
                        conflicts += 1
                mutations += 1
            elif step == "own":
                own_value += 1
                updated = store.update(own, expected_revision=own_rev, defaults={"baud_rate": own_value})
                assert updated.revision == own_rev + 1, (updated.revision, own_rev)
                own_rev = updated.revision
                mutations += 1
            else:
                name = f"eph-{index}-{eph}"
                eph += 1
                made = store.create(name, {"port_glob": f"/dev/eph{index}"}, {"parity": "even"})
                store.delete(name, expected_revision=made.revision)
                mutations += 2
        out.put(("ok", index, mutations, conflicts, own_rev, own_value))
    except BaseException:
        out.put(("error", index, traceback.format_exc()))


def _reader(path: str, ready: Any, stop: Any, out: Any) -> None:
    """Parse the file over and over (raw TOML and through a second store) while writers run."""
    try:
        store = ProfileStore(path)
        parses, errors = 0, []
        last = b""
        ready.set()
        while not stop.is_set():
            raw = Path(path).read_bytes()
            if raw != last:  # parse every version seen; idle otherwise to leave CPU to the writers
                try:
                    tomllib.loads(raw.decode("utf-8"))
                    store.list()
                except Exception as exc:  # any failure here is a torn or invalid file
                    errors.append(repr(exc))
                parses += 1
                last = raw
            time.sleep(0.002)
        out.put(("ok", parses, errors[:5]))
    except BaseException:
        out.put(("error", 0, [traceback.format_exc()]))


def test_eight_processes_hundred_mutations_each_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "profiles.toml"
    ProfileStore(path).create(SHARED, {"serial_number": SHARED}, {"baud_rate": SHARED_START})
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(N_PROCS)
    ready, stop = ctx.Event(), ctx.Event()
    results, reader_out = ctx.Queue(), ctx.Queue()
    reader = ctx.Process(target=_reader, args=(str(path), ready, stop, reader_out))
    reader.start()
    assert ready.wait(60)
    workers = [ctx.Process(target=_worker, args=(str(path), i, barrier, results)) for i in range(N_PROCS)]
    started = time.monotonic()
    for w in workers:
        w.start()
    try:
        outcomes = [results.get(timeout=180) for _ in range(N_PROCS)]
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        for w in workers:
            w.join(timeout=30)
        reader_result = reader_out.get(timeout=30)
        reader.join(timeout=30)
    errors = [o for o in outcomes if o[0] != "ok"]
    assert not errors, errors[0][2]
    assert all(w.exitcode == 0 for w in workers)

    # Every mutation happened, and each process's own profile saw exactly its own CAS chain.
    assert sum(o[2] for o in outcomes) == N_PROCS * OPS_PER_PROC
    store = ProfileStore(path)
    shared = store.get(SHARED)
    assert shared is not None
    assert shared.defaults["baud_rate"] == SHARED_START + N_PROCS * N_SHARED  # no lost increment
    assert shared.revision == 1 + N_PROCS * N_SHARED
    for _, index, _, _, own_rev, own_value in outcomes:
        own = store.get(f"own-{index}")
        assert own is not None
        assert (own.revision, own.defaults["baud_rate"]) == (own_rev, own_value) == (1 + N_OWN, 1 + N_OWN)
        assert [h.revision for h in own.history] == list(range(own_rev - HISTORY_LIMIT, own_rev))
    assert sorted(p.name for p in store.list()) == sorted([SHARED, *(f"own-{i}" for i in range(N_PROCS))])

    # The file always parsed, and the reader really watched it change.
    status, parses, reader_errors = reader_result
    assert status == "ok" and not reader_errors, reader_errors
    assert parses > 50, parses  # distinct versions of the file it parsed
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    conflicts = sum(o[3] for o in outcomes)
    print(f"\n8x100 mutations in {elapsed:.1f} s; {conflicts} CAS retries; reader parsed {parses} times")


def _blocked_writer(path: str, ready: Any, temps: Any) -> None:
    """Start an update whose ``os.replace`` never returns: the parent SIGKILLs us right there."""

    def replace_and_hang(src: str, dst: Any) -> None:
        temps.put(src)
        ready.set()
        time.sleep(600)

    os.replace = replace_and_hang  # type: ignore[assignment]  # this child only
    ProfileStore(path).update("dev", expected_revision=1, defaults={"baud_rate": 9600})


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_sigkill_between_temp_write_and_replace_leaves_old_file(tmp_path: Path) -> None:
    path = tmp_path / "profiles.toml"
    store = ProfileStore(path, lock_timeout=10)
    store.create("dev", {"vid": "0403", "pid": "6001", "serial_number": "A1"}, {"baud_rate": 115200})
    before = path.read_bytes()
    ctx = multiprocessing.get_context("spawn")
    ready, temps = ctx.Event(), ctx.Queue()
    child = ctx.Process(target=_blocked_writer, args=(str(path), ready, temps))
    child.start()
    try:
        assert ready.wait(60), "the child never reached os.replace"
        temp = Path(temps.get(timeout=10))
        # The new content was fully written and fsynced to the temp file before the rename.
        written = tomllib.loads(temp.read_text(encoding="utf-8"))
        assert written["profiles"]["dev"]["defaults"]["baud_rate"] == 9600
        os.kill(child.pid or 0, signal.SIGKILL)
    finally:
        child.join(timeout=30)
    assert child.exitcode == -signal.SIGKILL

    assert path.read_bytes() == before  # the old file, byte for byte
    survivor = ProfileStore(path).get("dev")
    assert survivor is not None and survivor.revision == 1 and survivor.defaults == {"baud_rate": 115200}
    assert temp.exists()  # the orphan is still there ...
    # ... the kernel released the dead writer's lock (a held lock would end in profile_store_io) ...
    after = store.update("dev", expected_revision=1, defaults={"baud_rate": 57600})
    assert after.revision == 2
    assert not temp.exists()  # ... and the next writer swept the orphan away
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
