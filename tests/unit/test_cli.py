"""CLI contract: bad flags are one line on stderr with exit 2 and nothing on stdout."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from serial_mcp import __version__


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "serial_mcp", *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_bad_flag_is_one_line_exit_2() -> None:
    r = run("--bogus")
    assert r.returncode == 2
    assert r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and "--bogus" in r.stderr


def test_bad_log_level() -> None:
    r = run("--log-level", "LOUD")
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_version_and_help() -> None:
    assert run("--version").stdout.strip() == f"serial-mcp {__version__}"
    h = run("--help")
    assert h.returncode == 0 and "--log-level" in h.stdout


@pytest.mark.slow
def test_serve_exits_cleanly_when_stdin_closes() -> None:
    r = run()
    assert r.returncode == 0 and r.stdout == ""


@pytest.mark.slow
def test_demo_runs_against_replayed_devices() -> None:
    r = run("demo")
    assert r.returncode == 0, r.stderr
    assert "replay://" in r.stdout and '"command":"+CSQ"' in r.stdout
    assert '"sentence":"GGA"' in r.stdout and "stop=match" in r.stdout


@pytest.mark.slow
def test_demo_against_the_simulator() -> None:
    r = run("demo", "--port", "sim://modem")
    assert r.returncode == 0, r.stderr
    assert "+CSQ" in r.stdout


@pytest.mark.slow
def test_a_future_profiles_file_stops_the_start_untouched(tmp_path: Path) -> None:
    store = tmp_path / "profiles.toml"
    store.write_text("schema_version = 99\n")
    r = run("--profiles-path", str(store))
    assert r.returncode != 0 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and "schema_version" in r.stderr
    assert store.read_text() == "schema_version = 99\n"


@pytest.mark.slow
def test_config_file_layers(tmp_path: Path) -> None:
    cfg = tmp_path / "serial-mcp.toml"
    cfg.write_text('transport = "http"\nhost = "0.0.0.0"\n')
    r = run("--config", str(cfg))  # the file asks for an open bind without a token: refused at startup
    assert r.returncode == 2 and "auth-token" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    bad = tmp_path / "bad.toml"
    bad.write_text("colour = 1\n")
    r = run("--config", str(bad))
    assert r.returncode == 2 and "colour" in r.stderr


@pytest.mark.slow
def test_an_unusable_capture_dir_stops_the_start(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "a-file"
    not_a_dir.write_text("x")
    for bad in (not_a_dir, not_a_dir / "below-a-file"):
        r = run("--capture-dir", str(bad))
        assert r.returncode == 1 and r.stdout == "", (bad, r)
        assert len(r.stderr.strip().splitlines()) == 1 and "capture directory" in r.stderr, r.stderr
    fresh = tmp_path / "new" / "captures"  # a directory that does not exist yet is made
    r = run("--capture-dir", str(fresh))
    assert r.returncode == 0 and r.stdout == "" and fresh.is_dir(), r.stderr


@pytest.mark.slow
def test_a_mistyped_option_with_a_value_is_named_not_the_value() -> None:
    # argparse alone blamed "8080" as an unknown COMMAND
    r = run("--http-port", "8080", "--transport", "http")
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1
    assert "unrecognized option --http-port; did you mean --port?" in r.stderr, r.stderr
    r = run("--log-level", "DEBUG", "--nope", "3")  # a known option's value is skipped over
    assert "unrecognized option --nope" in r.stderr and "COMMAND" not in r.stderr, r.stderr
    r = run("nosuchcmd")  # a real unknown command keeps argparse's own message
    assert "invalid choice: 'nosuchcmd'" in r.stderr, r.stderr
