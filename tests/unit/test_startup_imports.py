"""Start-up imports what a request needs when it needs it (issue 27).

A structural check, not a timing: the stdio server is built exactly as ``serial-mcp`` builds it
(``cli.main`` → ``serve``), stopped where it would start serving, and the modules it loaded are
listed. The GNSS decoders, the terminal emulator, the capture view and the HTTP transport are
for requests that ask for them; a server that has not been asked must not carry them. (uvicorn and
starlette are not on the list: ``import mcp`` itself loads them, for a bare SDK server too.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# The modules a stdio server must not import before a request asks for them, and who asks.
DEFERRED = {
    "pyubx2": "a read with rx_parser ubx/gnss",
    "pyrtcm": "a read with rx_parser rtcm3/gnss",
    "pynmeagps": "pyubx2 (a GNSS parser)",
    "pyte": "a read with screen",
    "serial_mcp.mcp.http": "--transport http",
    "serial_mcp.view": "serial-mcp view",
}

_PROBE = """
import json, sys
import anyio
from serial_mcp import cli

def stop_here(fn, *args, **kwargs):  # where serve() would start serving stdio
    print(json.dumps(sorted(sys.modules)))
    return None

anyio.run = stop_here
sys.exit(cli.main([]))
"""


def _modules_of_stdio_serve(tmp_path: Path, *, before: str = "") -> set[str]:
    root = Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "PYTHONPATH": str(root),
        "SERIAL_MCP_CAPTURE_DIR": str(tmp_path / "captures"),
        "SERIAL_MCP_PROFILES": str(tmp_path / "profiles.toml"),
    }
    env.pop("SERIAL_MCP_CONFIG", None)
    out = subprocess.run(
        [sys.executable, "-c", before + _PROBE],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=True,
    )  # fmt: skip
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_stdio_serve_imports_no_request_specific_module(tmp_path: Path) -> None:
    loaded = _modules_of_stdio_serve(tmp_path)
    assert "serial_mcp.mcp.server" in loaded  # the probe did reach the built server
    early = {m: why for m, why in DEFERRED.items() if m in loaded}
    assert not early, f"imported at start-up, before any request needs them: {early}"


@pytest.mark.parametrize(
    ("request_code", "module"),
    [
        ("from serial_mcp.core.parsers import build_parser; build_parser({'type': 'gnss'})\n", "pyubx2"),
        ("from serial_mcp.core.parsers import build_parser; build_parser({'type': 'rtcm3'})\n", "pyrtcm"),
        ("from serial_mcp.core.screen import TerminalScreen; TerminalScreen(80, 24)\n", "pyte"),
    ],
)
def test_the_request_that_needs_a_module_loads_it(tmp_path: Path, request_code: str, module: str) -> None:
    """The deferred import is still made, by the request that needs it (the probe can tell)."""
    assert module in _modules_of_stdio_serve(tmp_path, before=request_code)
