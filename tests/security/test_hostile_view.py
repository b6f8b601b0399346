"""``serial-mcp view`` under hostile files (issue 28.14): numbers no float can hold, special files in
place of the capture or the page, inputs without end.

A number that is not finite (``1e999``, ``NaN``) or too large for a float (a 400-digit integer) is a
missing value, counted in the page, never the end of it. The page is only ever written over a
regular file (a FIFO, a device node, or a link to one is refused, exit 2, and left as it was); the
capture is only read from a regular file, up to a size cap, and a refusal always says what was
wrong. The runs that could eat the machine on the code before the fix (``/dev/zero``, a FIFO with no
writer) run in a child process with an address-space limit and a timeout, so they fail instead.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from serial_mcp import cli
from serial_mcp.core.capture import CaptureEvent, CaptureHeader, capture_text
from serial_mcp.view import command
from tests.view.helpers import SAMPLES, capture_from_raw

CREATED = "2026-12-01T10:00:00.000000Z"
CHILD_MEMORY = 1 << 30  # the child's address space: a run that reads without end hits it, not the host
CHILD_TIMEOUT_S = 60  # a bound on a failure (a run blocked on a FIFO), not a speed requirement
HUGE = "9" * 400  # an integer no float can hold: float() of it raises OverflowError


def embedded(path: Path) -> dict[str, Any]:
    html = path.read_text(encoding="utf-8")
    data = json.loads(html.split('id="view-data">', 1)[1].split("</script>", 1)[0])
    assert isinstance(data, dict), data
    return data


def run_child(*argv: str) -> subprocess.CompletedProcess[str]:
    """``serial-mcp view ARGV`` in a child process limited to CHILD_MEMORY of address space."""
    script = (
        "import resource, sys\n"
        f"resource.setrlimit(resource.RLIMIT_AS, ({CHILD_MEMORY}, {CHILD_MEMORY}))\n"
        "from serial_mcp import cli\n"
        "sys.exit(cli.main(sys.argv[1:]))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", script, "view", *argv],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
        check=False,
    )


def one_clear_line(err: str) -> str:
    """The one error line a refusal prints, checked to say something after the program's name."""
    lines = err.splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith("serial-mcp: ") and len(line[len("serial-mcp: ") :].strip()) > 10, line
    return line


# --- numbers no float can hold --------------------------------------------------------------------


def test_json_values_beyond_float_are_missing_and_counted(tmp_path: Path) -> None:
    # json reads 1e999 as inf and a 400-digit integer as an int no float holds (the json_lines parser
    # keeps NaN and Infinity, which are not JSON, as raw text: not numbers at all)
    specials = ["1e999", "-1e999", "1E400", HUGE, "-" + HUGE]
    lines = []
    for i in range(20):
        v = specials[i // 4] if i % 4 == 3 else str(20 + i % 3)
        lines.append(f'{{"v": {v}, "n": {i}}}\n'.encode())
    capture = capture_from_raw(b"".join(lines), tmp_path / "specials.jsonl", chunk_lines=1)
    out = tmp_path / "specials.html"
    assert command.run_view(str(capture), str(out), "json_lines", None, None, ["v", "n"]) == 0
    data = embedded(out)
    series = {s["name"]: s for s in data["series"]}
    assert len(series["v"]["v"]) == 20 - len(specials)  # every special value left out, the rest kept
    assert all(isinstance(x, int | float) and abs(x) < 1e300 for x in series["v"]["v"])
    assert len(series["n"]["v"]) == 20
    assert data["meta"]["values_not_finite"] == len(specials)
    html = out.read_text(encoding="utf-8")
    assert f"{len(specials)} numeric value(s)" in html  # said in the page's header, not just the data


def test_header_numbers_beyond_float_do_not_stop_the_page(tmp_path: Path) -> None:
    capture = tmp_path / "header.jsonl"
    header = CaptureHeader(created=CREATED, settings={"baudrate": 9600}, device={"temperature": 20})
    text = capture_text(header, [CaptureEvent(0.0, "rx", b"hello\n")])
    first, rest = text.split("\n", 1)  # a header as a hostile writer makes it: numbers no float holds
    first = first.replace("9600", "1e999").replace('"temperature": 20', f'"temperature": {HUGE}')
    capture.write_text(first + "\n" + rest, encoding="utf-8")
    out = tmp_path / "header.html"
    assert command.run_view(str(capture), str(out), None, None, None, None) == 0
    meta = embedded(out)["meta"]
    assert meta["settings"]["baudrate"] is None and meta["device"]["temperature"] is None
    assert meta["values_not_finite"] == 2


# --- the page is written only over a regular file -------------------------------------------------


def refused_output(tmp_path: Path, target: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capture = SAMPLES / "esp32-boot.jsonl"
    assert cli.main(["view", str(capture), "-o", str(target)]) == 2
    line = one_clear_line(capsys.readouterr().err)
    assert str(target) in line and "regular file" in line
    assert not list(tmp_path.glob(".*.tmp"))  # nothing half-written left behind
    return line


def test_output_onto_a_fifo_is_refused_and_the_fifo_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "page.html"
    os.mkfifo(fifo)
    assert "FIFO" in refused_output(tmp_path, fifo, capsys)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_output_onto_a_device_node_is_refused_and_the_node_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    node = tmp_path / "null.html"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a null device of our own
    except PermissionError:
        pytest.skip("making a device node needs CAP_MKNOD (the link case below runs anyway)")
    assert "character device" in refused_output(tmp_path, node, capsys)
    assert stat.S_ISCHR(os.lstat(node).st_mode)


def test_output_through_a_link_to_a_device_is_refused_and_the_link_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = tmp_path / "page.html"
    link.symlink_to("/dev/null")
    assert "character device" in refused_output(tmp_path, link, capsys)
    assert os.readlink(link) == "/dev/null"


# --- the capture is read only from a regular file, up to a cap ------------------------------------


def test_dev_zero_as_input_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    proc = run_child("/dev/zero", "-o", str(tmp_path / "zero.html"))
    assert proc.returncode == 2, proc.stderr
    line = one_clear_line(proc.stderr)
    assert "/dev/zero" in line and "character device" in line
    assert not (tmp_path / "zero.html").exists()


def test_a_fifo_is_read_as_cat_reads_it_and_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 36.9: a FIFO is read like ``cat`` (waiting for its writer), up to the cap; past it, refused."""
    capture = capture_from_raw(b"hello world\n" * 10, tmp_path / "real.jsonl")
    fifo = tmp_path / "capture.jsonl"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"cat '{capture}' > '{fifo}'"])
    try:
        assert command.run_view(str(fifo), str(tmp_path / "fifo.html"), None, None, None, None) == 0
    finally:
        writer.wait(CHILD_TIMEOUT_S)
    assert "hello world" in (tmp_path / "fifo.html").read_text(encoding="utf-8")
    monkeypatch.setattr(command, "MAX_INPUT_BYTES", capture.stat().st_size - 1)
    writer = subprocess.Popen(["sh", "-c", f"cat '{capture}' > '{fifo}'"])
    try:
        assert command.run_view(str(fifo), str(tmp_path / "big.html"), None, None, None, None) == 2
    finally:
        writer.kill()
        writer.wait(CHILD_TIMEOUT_S)
    assert not (tmp_path / "big.html").exists()


def test_process_substitution_is_read_as_cat_reads_it(tmp_path: Path) -> None:
    capture = capture_from_raw(b"hello world\n" * 10, tmp_path / "real.jsonl")
    out = tmp_path / "sub.html"
    script = (
        f"from serial_mcp import cli; import sys; sys.exit(cli.main(['view', sys.argv[1], '-o', '{out}']))"
    )
    proc = subprocess.run(
        ["bash", "-c", f'"{sys.executable}" -c "{script}" <(cat "{capture}")'],
        capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "hello world" in out.read_text(encoding="utf-8")


def test_a_directory_as_input_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "captures.jsonl"
    folder.mkdir()
    assert cli.main(["view", str(folder), "-o", str(tmp_path / "d.html")]) == 2
    assert "directory" in one_clear_line(capsys.readouterr().err)


def test_input_larger_than_the_cap_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    with big.open("wb") as f:  # sparse: a size no page could hold, without using the disk
        f.truncate(command.MAX_INPUT_BYTES + 1)
    proc = run_child(str(big), "-o", str(tmp_path / "big.html"))
    assert proc.returncode == 2, proc.stderr
    line = one_clear_line(proc.stderr)
    assert str(command.MAX_INPUT_BYTES + 1) in line and str(command.MAX_INPUT_BYTES) in line


def test_input_up_to_the_cap_is_viewed_and_one_byte_more_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = b"hello world\n" * 10
    path = tmp_path / "log.txt"
    path.write_bytes(raw)
    monkeypatch.setattr(command, "MAX_INPUT_BYTES", len(raw))
    assert cli.main(["view", str(path), "-o", str(tmp_path / "ok.html")]) == 0
    path.write_bytes(raw + b"!")
    capsys.readouterr()
    assert cli.main(["view", str(path), "-o", str(tmp_path / "no.html")]) == 2
    assert str(len(raw) + 1) in one_clear_line(capsys.readouterr().err)
    assert not (tmp_path / "no.html").exists()


def test_an_error_without_text_is_never_printed_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_memory(*_: object, **__: object) -> None:
        raise MemoryError  # what reading an endless input ends in: an exception with no message

    monkeypatch.setattr(command, "build_view", no_memory)
    capture = SAMPLES / "esp32-boot.jsonl"
    assert cli.main(["view", str(capture), "-o", str(tmp_path / "m.html")]) == 1
    line = one_clear_line(capsys.readouterr().err)
    assert "MemoryError" in line and "esp32-boot.jsonl" in line


def test_a_fifo_writer_that_comes_and_goes_while_it_is_judged_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fast writer (``cat small > fifo``) may open, write and close while the view is still judging
    what the path is: the bytes must still be read, not dropped with a descriptor and then waited for
    forever (CI hung here for 120 s). The writer is run at the worst moment: inside the first fstat."""
    capture = capture_from_raw(b"hello world\n" * 10, tmp_path / "real.jsonl")
    fifo = tmp_path / "capture.jsonl"
    os.mkfifo(fifo)
    real_fstat = os.fstat
    wrote: list[int] = []

    def fstat_then_write(fd: int) -> os.stat_result:
        st = real_fstat(fd)
        if stat.S_ISFIFO(st.st_mode) and not wrote:
            w = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # succeeds: the view holds a reader
            wrote.append(os.write(w, capture.read_bytes()))
            os.close(w)
        return st

    monkeypatch.setattr(os, "fstat", fstat_then_write)
    done: list[int] = []
    worker = threading.Thread(
        target=lambda: done.append(
            command.run_view(str(fifo), str(tmp_path / "f.html"), None, None, None, None)
        ),
        daemon=True,
    )
    worker.start()
    worker.join(CHILD_TIMEOUT_S)
    if worker.is_alive():  # unblock the hung reader so the suite can go on, then fail
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("the view waited for a writer that had already written and gone")
    assert wrote and done == [0]
    assert "hello world" in (tmp_path / "f.html").read_text(encoding="utf-8")
