"""``serial-mcp decode`` reads only regular files of a bounded size (issue 28.14's rule, for decode).

``/dev/zero`` (endless), a FIFO (blocks until a writer comes, then endless) are refused with what
they are, before anything is read; the process runs under an address-space limit so that a decode
which did read ``/dev/zero`` fails fast instead of taking the machine's memory.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_AS_LIMIT = 2 << 30  # a decode that reads /dev/zero hits this in seconds


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (_AS_LIMIT, _AS_LIMIT))


def _decode(path: Path | str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "serial_mcp", "decode", str(path)],
        capture_output=True, text=True, timeout=60, preexec_fn=_limit_memory,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_decode_refuses_an_endless_device() -> None:
    r = _decode("/dev/zero")
    assert r.returncode == 1
    assert r.stdout == ""
    assert "cannot decode /dev/zero: it is a character device, not a regular file" in r.stderr


def test_decode_refuses_a_fifo_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    r = _decode(fifo)  # the old reader blocked in open() until the timeout
    assert r.returncode == 1
    assert f"cannot decode {fifo}: it is a FIFO" in r.stderr


def test_decode_still_reads_a_regular_file(tmp_path: Path) -> None:
    raw = tmp_path / "dump.bin"
    raw.write_bytes(b"one\ntwo\n")
    r = _decode(raw)
    assert r.returncode == 0, r.stderr
    assert [line.split(maxsplit=3)[3] for line in r.stdout.splitlines()] == ['"one"', '"two"']
