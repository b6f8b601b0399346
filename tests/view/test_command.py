"""``serial-mcp view`` as a person runs it: files written, messages on stderr, mistakes refused."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import webbrowser
from pathlib import Path
from typing import Any

import pytest

from serial_mcp import cli
from serial_mcp.commands.decode import run_decode
from serial_mcp.view import command
from tests.view.helpers import SAMPLES


def embedded(path: Path) -> dict[str, Any]:
    html = path.read_text(encoding="utf-8")
    data = json.loads(html.split('id="view-data">', 1)[1].split("</script>", 1)[0])
    assert isinstance(data, dict), data
    return data


def test_cli_writes_the_page_next_to_the_capture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capture = tmp_path / "gps.jsonl"
    shutil.copy(SAMPLES / "gps-quectel-l76k.jsonl", capture)
    assert cli.main(["view", str(capture), "--protocol", "nmea0183", "--fields", "GGA.satellites,hdop"]) == 0
    page = tmp_path / "gps.html"
    err = capsys.readouterr()
    assert err.out == "" and str(page) in err.err
    data = embedded(page)
    assert data["meta"]["protocol"] == "nmea0183"
    assert [s["name"] for s in data["series"]] == ["GGA.satellites", "GGA.hdop"]
    assert not list(tmp_path.glob(".*.tmp"))  # the atomic write left nothing behind


def test_cli_explicit_framing_and_parser_like_decode(tmp_path: Path) -> None:
    out = tmp_path / "m.html"
    argv = ["view", str(SAMPLES / "modbus-ascii-delta.jsonl"), "-o", str(out)]
    argv += [
        "--rx-framing",
        '{"type": "start_end", "start": [":"], "end": "\\r\\n"}',
        "--rx-parser",
        '{"type": "modbus_ascii"}',
    ]
    assert cli.main(argv) == 0
    data = embedded(out)
    assert data["frames"]["t"] and data["frames"]["would_drop"] == 0


def test_cli_refusals_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capture = tmp_path / "c.jsonl"
    shutil.copy(SAMPLES / "esp32-boot.jsonl", capture)
    assert cli.main(["view", str(capture), "-o", str(capture)]) == 1
    assert cli.main(["view", str(capture), "--gap", "0"]) == 1
    assert cli.main(["view", str(capture), "--protocol", "nmea"]) == 1
    assert cli.main(["view", str(tmp_path / "missing.jsonl")]) == 1
    assert cli.main(["view", str(capture), "--rx-parser", "{bad"]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 5 and all(line.startswith("serial-mcp: ") for line in lines)
    assert "overwrite the capture" in lines[0] and "--gap" in lines[1] and "nmea0183" in lines[2]
    assert "missing.jsonl" in lines[3] and "--rx-parser" in lines[4]
    assert capture.read_bytes() == (SAMPLES / "esp32-boot.jsonl").read_bytes()


def test_unknown_plot_field_is_named_with_the_choices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "x.html"
    assert (
        cli.main(
            [
                "view",
                str(SAMPLES / "gps-quectel-l76k.jsonl"),
                "-o",
                str(out),
                "--protocol",
                "nmea0183",
                "--fields",
                "sats",
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert "no numeric field named sats" in err and "GGA.satellites" in err


def test_progress_is_reported_for_long_inputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "p.html"
    monkeypatch.setattr(command, "PROGRESS_FROM_BYTES", 0)
    assert (
        command.run_view(str(SAMPLES / "gps-quectel-l76k.jsonl"), str(out), "nmea0183", None, None, None) == 0
    )
    err = capsys.readouterr().err
    assert "view: read" in err and "view: 85 events" in err and "view: decoded" in err and "wrote" in err
    monkeypatch.setattr(command, "PROGRESS_FROM_BYTES", 1 << 40)
    assert (
        command.run_view(str(SAMPLES / "gps-quectel-l76k.jsonl"), str(out), "nmea0183", None, None, None) == 0
    )
    assert capsys.readouterr().err.count("\n") == 1  # a small file: just the result


def test_open_hands_the_file_to_the_browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", opened.append)  # the module command.py opens pages with
    out = tmp_path / "o.html"
    assert cli.main(["view", str(SAMPLES / "esp32-boot.jsonl"), "-o", str(out), "--open"]) == 0
    assert opened == [out.resolve().as_uri()]


def test_installed_command_runs(tmp_path: Path) -> None:
    out = tmp_path / "s.html"
    proc = subprocess.run(
        [sys.executable, "-m", "serial_mcp", "view", str(SAMPLES / "uboot-mt7622.jsonl"), "-o", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and out.stat().st_size > 10_000


def test_print_filter_leaves_hidden_esp_idf_lines_out_of_the_frames_and_counts_them(tmp_path: Path) -> None:
    """``--print-filter`` as in ``decode``: the esp_log parser with that filter; the frames table has
    only the lines esp-idf-monitor would print, the page says how many it hid."""
    capture = SAMPLES / "esp32-boot.jsonl"
    every, shown = tmp_path / "every.html", tmp_path / "shown.html"
    assert cli.main(["view", str(capture), "-o", str(every), "--rx-parser", '{"type": "esp_log"}']) == 0
    assert cli.main(["view", str(capture), "-o", str(shown), "--print-filter", "*:W"]) == 0
    all_frames, kept = embedded(every)["frames"], embedded(shown)["frames"]
    printed = io.StringIO()
    assert run_decode(str(capture), None, None, None, "jsonl", "both", printed, print_filter="*:W") == 0
    decoded = [json.loads(line) for line in printed.getvalue().splitlines()]
    assert [f["offset"] for f in decoded] == kept["off"]  # the frames decode --print-filter prints
    assert {"log"} <= set(kept["kinds"]) and len(kept["t"]) > 0
    assert kept["filtered"] == len(all_frames["t"]) - len(kept["t"]) > 0
    assert all_frames["filtered"] == 0
    assert embedded(shown)["meta"]["print_filter"] == "*:W"


def test_print_filter_is_refused_as_decode_refuses_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capture = SAMPLES / "esp32-boot.jsonl"
    out = tmp_path / "p.html"
    assert cli.main(["view", str(capture), "-o", str(out), "--protocol", "nmea0183", "--print-filter", "*:E"]) == 1
    assert cli.main(["view", str(capture), "-o", str(out), "--print-filter", "boot:X"]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and all(line.startswith("serial-mcp: ") for line in lines)
    assert "needs the esp_log parser" in lines[0] and "'X' is not one of" in lines[1]
    assert not out.exists()
