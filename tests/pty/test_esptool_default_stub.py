"""Issue 37.7: esptool's default flow (its stub flasher) on sim://esp32-rom ends at once with an error
that names ``--no-stub`` — the simulator cannot run code loaded into RAM — instead of waiting for ever at
"Running stub flasher…"."""

from __future__ import annotations

import subprocess
import sys

import pytest

from serial_mcp.api import serve_pty

pytest.importorskip("esptool")

pytestmark = [pytest.mark.pty, pytest.mark.slow]


def test_esptools_default_flow_fails_naming_no_stub() -> None:
    with serve_pty("sim://esp32-rom?boot=download") as bridge:
        cmd = [sys.executable, "-m", "esptool", "--chip", "esp32", "--port", bridge.path,
               "--before", "no-reset", "--after", "no-reset", "read-mac"]  # fmt: skip
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)  # today: still waiting at 60 s
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert "Running stub flasher..." in out and "Failed to start stub flasher" in out
    assert "run esptool with --no-stub" in out
