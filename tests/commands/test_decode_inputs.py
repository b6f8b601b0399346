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


def test_decode_counts_every_frame_once_bad_ones_included(tmp_path: Path) -> None:
    """Issue 37.1: the totals of an offline decode add up, bad frames included: a real log with 46
    sentences whose checksums are wrong (the preset's validation drops them) says so."""
    r = subprocess.run(
        [sys.executable, "-m", "serial_mcp", "decode", str(ROOT / "tests/data/nmea/gpsdf.log"),
         "--protocol", "nmea0183", "--format", "jsonl"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    shown = len(r.stdout.splitlines())
    assert f"{shown + 46} frame(s): {shown} valid, 46 bad (46 dropped by validation" in r.stderr, r.stderr


def test_a_damaged_modbus_reply_at_the_end_of_a_file_is_a_bad_frame(tmp_path: Path) -> None:
    from serial_mcp.core.offline_decode import decode_streams

    good = bytes.fromhex("010300000001840a")
    damaged = bytes.fromhex("010302002a") + b"\x00\x00"  # its CRC is wrong; a request would be 8 bytes
    frames, _ = decode_streams({"rx": [(0.0, good + damaged)]}, {"type": "modbus_rtu"}, None, ["rx"])
    assert [(f["offset"], f.get("checksum_valid")) for f in frames] == [(0, True), (len(good), False)]
