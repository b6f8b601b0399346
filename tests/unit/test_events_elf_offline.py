"""``--elf`` offline: ``serial-mcp decode --events --elf app.elf LOG`` and ``serial-mcp view --elf`` decode the
backtrace addresses of the events they find into ``function at file:line``, as a live connection does (the same
loader and lookups, ``serial/firmware_elf.py``); checked against binutils' addr2line on an ELF built here with
gcc -g. The CLI is a local user: any readable path will do, but a missing, non-regular, oversized or non-ELF
file is one clean line on stderr, a non-zero exit and nothing on stdout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from serial_mcp import cli
from tests.unit.test_events_elf import _addr2line, _panic

SOURCE = """\
#include <stdio.h>
__attribute__((noinline)) int crash_here(int *p) { return *p + 1; }
__attribute__((noinline)) int middle(int *p) { int r = crash_here(p); printf("%d\\n", r); return r * 2; }
__attribute__((noinline)) int app_main(int n) { int r = middle(&n); printf("%d\\n", r); return r; }
int main(int argc, char **argv) { (void)argv; return app_main(argc); }
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("gcc") is None or shutil.which("addr2line") is None or shutil.which("nm") is None:
        pytest.skip("SKIPPED LOUDLY: gcc, nm and addr2line (binutils) are needed to build and check an ELF")
    src = tmp_path_factory.mktemp("fw-offline")
    (src / "main.c").write_text(SOURCE)
    subprocess.run(["gcc", "-g", "-O1", "-o", "app.elf", "main.c"], cwd=src, check=True)
    return src / "app.elf"


def _inside(elf: Path, function: str) -> int:
    """An address in the middle of ``function``, from the ELF's symbol table (``nm -S``: address, size)."""
    out = subprocess.run(["nm", "-S", str(elf)], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3] == function:
            return int(parts[0], 16) + int(parts[1], 16) // 2
    raise AssertionError(f"{function} not in the symbol table")


@pytest.fixture
def crash_log(program: Path, tmp_path: Path) -> tuple[Path, int, int]:
    """A raw log (boot, then an ESP-IDF panic whose backtrace holds two of the program's functions)."""
    pc, caller = _inside(program, "crash_here"), _inside(program, "middle")
    log = tmp_path / "crash.log"
    log.write_bytes(b"ets Jun  8 2016 00:22:57\r\n\r\nrst:0x1 (POWERON_RESET),boot:0x13\r\n" + _panic(pc, caller))
    return log, pc, caller


def test_decode_events_with_an_elf_ends_each_crash_line_with_where_it_crashed(
    program: Path, crash_log: tuple[Path, int, int], capsys: pytest.CaptureFixture[str]
) -> None:
    log, pc, caller = crash_log
    assert cli.main(["decode", "--events", "--elf", str(program), str(log)]) == 0
    lines = capsys.readouterr().out.splitlines()
    crash = next(line for line in lines if "crash at offset" in line)
    where = _addr2line(program, pc)
    assert where.startswith("crash_here at ") and where.endswith("main.c:2")  # addr2line's own answer
    assert crash.endswith(f" — {where} ← {_addr2line(program, caller)}")  # then its caller (issue 38)
    assert all(" — " not in line for line in lines if "crash at offset" not in line)  # boots: no frames


def test_decode_events_jsonl_with_an_elf_gives_each_address_its_frames(
    program: Path, crash_log: tuple[Path, int, int], capsys: pytest.CaptureFixture[str]
) -> None:
    log, pc, caller = crash_log
    assert cli.main(["decode", "--events", "--format", "jsonl", "--elf", str(program), str(log)]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    crash = next(e for e in events if e["kind"] == "crash")
    assert crash["frames"] == {
        f"0x{pc:08x}": [_addr2line(program, pc)],
        f"0x{caller:08x}": [_addr2line(program, caller)],
    }
    assert _addr2line(program, caller).startswith("middle at ") and _addr2line(program, caller).endswith(":3")
    assert all("frames" not in e for e in events if e["kind"] != "crash")
    assert cli.main(["decode", "--events", "--format", "jsonl", str(log)]) == 0  # without an ELF: no frames
    assert all("frames" not in json.loads(line) for line in capsys.readouterr().out.splitlines())


def test_a_bad_elf_is_one_clean_line_and_nothing_on_stdout(
    program: Path,
    crash_log: tuple[Path, int, int],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log, _, _ = crash_log
    text = tmp_path / "app.bin"
    text.write_bytes(b"\xe9\x03\x02\x20" + bytes(60))
    fifo = tmp_path / "pipe.elf"
    os.mkfifo(fifo)
    cases = {
        str(tmp_path / "missing.elf"): "no such file",
        str(text): "not an ELF",
        str(fifo): "not a regular file",
        str(tmp_path): "not a regular file",
    }
    for elf, says in cases.items():
        assert cli.main(["decode", "--events", "--elf", elf, str(log)]) == 1, elf
        out = capsys.readouterr()
        assert out.out == "", elf
        assert len(out.err.splitlines()) == 1 and out.err.startswith("serial-mcp: ") and says in out.err, out.err
    big = tmp_path / "big.elf"  # (a copy: the program itself is in the cache, parsed under the real limit)
    shutil.copy(program, big)
    monkeypatch.setattr("serial_mcp.core.elf_symbols.MAX_ELF_BYTES", big.stat().st_size - 1)
    assert cli.main(["decode", "--events", "--elf", str(big), str(log)]) == 1
    out = capsys.readouterr()
    assert out.out == "" and "limit" in out.err and len(out.err.splitlines()) == 1


def test_decode_refuses_an_elf_without_events(
    program: Path, crash_log: tuple[Path, int, int], capsys: pytest.CaptureFixture[str]
) -> None:
    log, _, _ = crash_log
    assert cli.main(["decode", "--elf", str(program), str(log)]) == 1  # frames are not decoded against it
    out = capsys.readouterr()
    assert out.out == "" and "--events" in out.err and len(out.err.splitlines()) == 1


def test_view_with_an_elf_shows_the_frames_in_the_crash_mark(
    program: Path, crash_log: tuple[Path, int, int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.view.test_command import embedded

    log, pc, caller = crash_log
    page = tmp_path / "crash.html"
    assert cli.main(["view", str(log), "-o", str(page), "--elf", str(program)]) == 0
    markers = embedded(page)["timeline"]["markers"]
    crash = next(m for m in markers if m[1] == "crash")
    assert crash[3] == [f"0x{pc:08x} {_addr2line(program, pc)}", f"0x{caller:08x} {_addr2line(program, caller)}"]
    assert all(len(m) == 3 for m in markers if m[1] != "crash")
    assert cli.main(["view", str(log), "-o", str(page), "--elf", str(log)]) == 1  # not an ELF
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith("serial-mcp: ") and "not an ELF" in err[-1]


def test_view_decodes_the_crash_a_recorded_capture_carries(
    program: Path, crash_log: tuple[Path, int, int], tmp_path: Path
) -> None:
    """A capture recorded live holds its events as markers (``event``): their addresses are decoded against
    ``--elf`` as well; frames the connection decoded when it recorded are shown as they are."""
    from serial_mcp.commands.decode import detect_events
    from serial_mcp.core.capture import CaptureEvent, CaptureHeader, capture_text
    from serial_mcp.serial.event_text import event_dict
    from serial_mcp.serial.firmware_elf import load_local_elf
    from serial_mcp.view.model import ViewOptions, build_view

    log, pc, caller = crash_log
    raw = log.read_bytes()
    crash = next(e for e in detect_events([(0.5, raw)]) if e.kind == "crash")
    elf = load_local_elf(str(program))

    def capture(event: dict[str, object]) -> bytes:
        events = [
            CaptureEvent(0.5, "rx", raw, 0),
            CaptureEvent(0.6, "marker", fields={"label": "⚠ " + crash.summary(), "event": event}),
        ]
        return capture_text(CaptureHeader(created="2026-12-02T10:00:00.000000Z"), events).encode()

    expected = [f"0x{pc:08x} {_addr2line(program, pc)}", f"0x{caller:08x} {_addr2line(program, caller)}"]
    undecoded = capture(event_dict(crash))
    marks = build_view(undecoded, "c.jsonl", ViewOptions(), elf=elf)["timeline"]["markers"]
    assert next(m for m in marks if m[1] == "crash")[3] == expected
    plain = build_view(undecoded, "c.jsonl", ViewOptions())["timeline"]["markers"]
    assert all(len(m) == 3 for m in plain)  # no ELF, nothing decoded when recorded: no frames
    recorded = capture(event_dict(crash, elf.decode_event(crash)))  # decoded live when it was recorded
    marks = build_view(recorded, "c.jsonl", ViewOptions())["timeline"]["markers"]
    assert next(m for m in marks if m[1] == "crash")[3] == expected
