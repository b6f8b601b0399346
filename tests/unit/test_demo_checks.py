"""Issue 37.4: ``serial-mcp demo`` checks every step and fails naming the first that did not give what
it should; ``sim://modem`` answers what a modem's first session sends."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from serial_mcp.mcp.demo_client import Step, final_ok, matched, verdict
from serial_mcp.serial.sim.modem import ModemResponder

OK = b"\r\nOK\r\n"


def demo(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    return subprocess.run(
        [sys.executable, "-m", "serial_mcp", "demo", *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        cwd=cwd,
        env=env,
    )


@pytest.mark.slow
def test_demo_on_an_echo_port_fails_naming_the_step() -> None:
    r = demo("--port", "sim://echo")
    assert r.returncode == 1, r.stdout
    last = r.stdout.strip().splitlines()[-1]
    assert last.startswith("demo FAILED at step 3 (transact") and "AT\\r" in last and "never matched" in last
    assert "every call behaved" not in r.stdout and "all " not in last


@pytest.mark.slow
def test_demo_on_the_simulated_modem_from_another_directory_passes(tmp_path: Path) -> None:
    r = demo(cwd=tmp_path)  # no captures/ here: the built-in modem
    assert r.returncode == 0, r.stdout + r.stderr
    assert "sim://modem" in r.stdout and "FAILED" not in r.stdout
    assert r.stdout.strip().splitlines()[-1].startswith("demo finished: all 10 steps")


def test_a_step_fails_on_an_unmatched_read_a_failed_final_or_an_unrefused_typo() -> None:
    step = Step("transact", {}, matched)
    assert verdict(step, False, {"read": {"stop_reason": "match"}}) is None
    assert "stop=timeout" in (verdict(step, False, {"read": {"stop_reason": "timeout", "data": ""}}) or "")
    at = Step("transact", {}, final_ok)
    ok = {"read": {"frames": [{"parsed": {"kind": "final", "status": "OK", "success": True}}]}}
    bad = {"read": {"frames": [{"parsed": {"kind": "final", "status": "ERROR", "success": False}}]}}
    assert verdict(at, False, ok) is None and "ERROR" in (verdict(at, False, bad) or "")
    assert verdict(at, False, {"read": {"stop_reason": "timeout"}}) is not None
    assert verdict(at, True, {"error": {"code": "timeout", "message": "no"}}) is not None
    typo = Step("open", {}, error="invalid_argument")
    assert verdict(typo, True, {"error": {"code": "invalid_argument", "message": "x"}}) is None
    assert verdict(typo, False, {"connection_id": "c2"}) is not None


def test_the_simulated_modem_answers_a_first_session() -> None:
    modem = ModemResponder()
    for cmd in (b"ATZ\r", b"AT&F\r", b"ATE0\r", b"AT+CMEE=2\r"):
        assert modem(cmd) == OK, cmd
    assert modem(b"AT+CMEE?\r") == b"\r\n+CMEE: 2\r\n" + OK
    assert modem(b"AT+CMEE=?\r") == b"\r\n+CMEE: (0-2)\r\n" + OK
    assert modem(b"ATE1\r") == OK
    assert modem(b"AT\r") == b"AT\r" + OK, "echo on: the command comes back first"
    assert modem(b"ATZ\r") == b"ATZ\r" + OK and modem(b"AT\r") == OK, "ATZ: echo off again"
    assert modem(b"AT+CMEE?\r") == b"\r\n+CMEE: 0\r\n" + OK
    assert modem(b"AT+CMEE=7\r") == b"\r\nERROR\r\n"
