"""Pieces every test that runs a real ``serial-mcp`` subprocess shares: its environment and the
raw JSON-RPC of a 2025-11-25 handshake."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

PASSED_ENV = ("PATH", "HOME", "PYTHONPATH", "VIRTUAL_ENV")

INITIALIZE_PARAMS: dict[str, Any] = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "t", "version": "0"},
}
INITIALIZE: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE_PARAMS}
INITIALIZED: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def server_env(**extra: str) -> dict[str, str]:
    """The environment a server subprocess needs (and nothing else of ours)."""
    return {**{k: v for k, v in os.environ.items() if k in PASSED_ENV}, **extra}


def start_server(*args: str) -> subprocess.Popen[bytes]:
    """``python -m serial_mcp`` with pipes for stdin and stdout, stderr dropped."""
    return subprocess.Popen(
        [sys.executable, "-m", "serial_mcp", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server_env(),
    )
