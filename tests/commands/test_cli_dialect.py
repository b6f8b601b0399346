"""One CLI dialect (issue 42.4): the tools' flag names everywhere, a global ``--port`` that cannot
swallow a serial port, every scheme in PORT's help, errors that name commands, quiet on a closed
pipe, third-party log lines off the terminal, and a start that says what it is doing (42.3)."""

from __future__ import annotations

import argparse
import io
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from serial_mcp import cli

ROOT = Path(__file__).parents[2]
PORT_COMMANDS = ("record", "mirror", "send", "read")


def subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@pytest.mark.parametrize("command", PORT_COMMANDS)
def test_every_port_command_takes_baud_rate_and_still_the_old_baud(command: str) -> None:
    sub = subparsers()[command]
    extra = ["-o", "x.jsonl"] if command == "record" else []
    data = ["AT"] if command == "send" else []
    assert sub.parse_args(["sim://modem", *data, *extra, "--baud-rate", "9600"]).baud_rate == 9600
    assert sub.parse_args(["sim://modem", *data, *extra, "--baud", "4800"]).baud_rate == 4800
    shown = sub.format_help()
    assert "--baud-rate" in shown and "--baud " not in shown and "--baud," not in shown  # one spelling shown


@pytest.mark.parametrize("command", PORT_COMMANDS)
def test_port_help_names_the_simulators_and_the_schemes(command: str) -> None:
    shown = " ".join(subparsers()[command].format_help().split())
    for scheme in ("sim://modem", "socket://", "rfc2217://", "replay://", "labgrid://"):
        assert scheme in shown, (command, scheme)


def test_record_defaults_to_115200_and_oneshots_to_the_tools_default() -> None:
    subs = subparsers()
    assert subs["record"].parse_args(["sim://echo", "-o", "x.jsonl"]).baud_rate == 115200
    assert subs["send"].parse_args(["sim://echo", "AT"]).baud_rate is None


def test_a_serial_port_given_as_the_global_port_is_demos_port(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake_demo(device: str | None, out: Any, flags: list[str]) -> int:
        seen["device"] = device
        return 0

    monkeypatch.setattr("serial_mcp.mcp.demo_client.run_demo", fake_demo)
    assert cli.main(["--port", "/dev/ttyUSB0", "demo"]) == 0
    assert seen["device"] == "/dev/ttyUSB0"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--port", "/dev/ttyUSB0", "send", "sim://modem", "AT"], "serial-mcp send /dev/ttyUSB0 ..."),
        (["--port", "sim://modem"], "serial-mcp demo --port sim://modem"),
    ],
)
def test_a_serial_port_in_the_http_port_is_a_clear_usage_error(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "HTTP port" in err and said in err and "invalid literal" not in err
    assert len(err.strip().splitlines()) == 1


def test_the_http_port_still_takes_a_number() -> None:
    args = cli.build_parser().parse_args(["--port", "8080", "--transport", "http"])
    assert cli._serial_port_placed(args) and args.port == "8080"


def test_cli_errors_name_the_command_not_the_tool(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["send", "/dev/serial-mcp-no-such-port", "AT"]) == 3
    err = capsys.readouterr().err
    assert "run 'serial-mcp ports'" in err and "list_ports" not in err


@pytest.mark.slow  # a subprocess: labgrid's client leaves its threads to the process's end
def test_ports_shows_a_lab_error_in_plain_text_and_not_labgrids_own_log_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "serial_mcp", "--labgrid-coordinator", "127.0.0.1:1", "ports"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "labgrid places not listed:" in done.stderr and "127.0.0.1:1" in done.stderr
    assert "ERROR root" not in done.stderr and "coordinator is unavailable" not in done.stderr


def test_decode_prints_decoded_values(capsys: pytest.CaptureFixture[str]) -> None:
    capture = ROOT / "captures" / "gps-quectel-l76k.jsonl"
    assert cli.main(["decode", str(capture), "--protocol", "nmea0183"]) == 0
    lines = capsys.readouterr().out.splitlines()
    gga = [line for line in lines if "GGA" in line]
    assert gga and all(" ok: fix=" in line and " lat=" in line and "{" not in line for line in gga), gga[:3]


class ClosedPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def fileno(self) -> int:
        raise io.UnsupportedOperation("no fd")


def test_a_closed_stdout_ends_quietly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    raw = tmp_path / "dump.bin"
    raw.write_bytes(b"line\n" * 100)
    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert cli.main(["decode", str(raw)]) == 141
    assert capsys.readouterr().err == ""


def test_a_closed_stdout_ends_a_one_shot_quietly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert cli.main(["send", "sim://modem", r"AT\r", "--protocol", "at_command"]) == 141
    assert "Broken pipe" not in capsys.readouterr().err


def test_a_closed_stdout_inside_a_task_group_ends_quietly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def demo_into_a_closed_pipe(device: str | None, out: Any, flags: list[str]) -> int:
        raise ExceptionGroup("unhandled errors in a TaskGroup", [BrokenPipeError(32, "Broken pipe")])

    monkeypatch.setattr("serial_mcp.mcp.demo_client.run_demo", demo_into_a_closed_pipe)
    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert cli.main(["demo"]) == 141
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_piped_into_head_no_broken_pipe(tmp_path: Path) -> None:
    raw = tmp_path / "dump.bin"
    raw.write_bytes(b"line\n" * 200_000)
    done = subprocess.run(
        ["sh", "-c", f'"{sys.executable}" -m serial_mcp decode "{raw}" | head -1'],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.stdout.count("\n") == 1
    assert "Broken pipe" not in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_library_log_lines_on_the_root_logger_stay_off_the_terminal() -> None:
    def record(name: str) -> logging.LogRecord:
        return logging.LogRecord(name, logging.ERROR, __file__, 1, "coordinator is unavailable", None, None)

    assert not cli._ours_or_named(record("root"))  # labgrid's "ERROR root: coordinator is unavailable"
    assert not cli._ours_or_named(record("labgrid.remote.client"))
    assert cli._ours_or_named(record("serial_mcp.serial.labgrid_client"))
    assert cli._ours_or_named(record("mcp.server"))


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def config_of(*argv: str) -> Any:
    from serial_mcp import config

    return config.resolve(cli.build_parser().parse_args(list(argv)), environ={})


def test_a_person_at_a_terminal_is_told_what_is_running(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", Terminal())
    cli.say_how_it_serves(config_of())
    out, err = capsys.readouterr()
    assert out == ""  # stdout stays the protocol's
    assert len(err.splitlines()) == 1 and "MCP over stdio" in err and "--help" in err and "demo" in err


def test_a_client_starting_it_hears_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO())
    cli.say_how_it_serves(config_of())
    assert capsys.readouterr() == ("", "")


def test_http_says_its_url(capsys: pytest.CaptureFixture[str]) -> None:
    cli.say_how_it_serves(config_of("--transport", "http", "--port", "9123"))
    out, err = capsys.readouterr()
    assert out == "" and "http://127.0.0.1:9123/mcp" in err
