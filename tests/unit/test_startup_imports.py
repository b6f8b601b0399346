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

from serial_mcp.mcp.tool_cache import default_path

pytestmark = pytest.mark.slow  # each test starts a Python of its own (~2 s): the full suite runs them

# The modules a stdio server must not import before a request asks for them, and who asks.
DEFERRED = {
    "pyubx2": "a read with rx_parser ubx/gnss",
    "pyrtcm": "a read with rx_parser rtcm3/gnss",
    "pynmeagps": "pyubx2 (a GNSS parser)",
    "pyte": "a read with screen",
    "serial_mcp.mcp.http": "--transport http",
    "serial_mcp.view": "serial-mcp view",
    "elftools": "open(elf=...): backtrace decoding (firmware_elf.load_elf)",
    "serial_mcp.core.elf_symbols": "open(elf=...)",
    "serial_mcp.core.events.detector": "the first port opened (its event watch)",
    "serial_mcp.core.events.signatures": "the first port opened",
    "ahocorasick_rs": "the first port opened (the event detector's prefilter)",
    "serial_mcp.serial.sim.modem": "opening sim://modem or sim://echo",
    "serial_mcp.serial.sim.timeline": "opening a sim:// device with a clock",
    "serial_mcp.serial.sim.micropython": "opening sim://micropython",
    "serial_mcp.serial.sim.esp32_rom": "opening sim://esp32-rom",
    "serial_mcp.serial.sim.reboot_board": "opening sim://reboot-board",
    "serial_mcp.serial.sim.slow_modem": "opening sim://slow-modem",
    "serial_mcp.core.xmodem": "file_transfer (on a worker thread)",
    "serial_mcp.serial.rfc2217_mirror": "open(mirror='rfc2217') or configure(defaults={'mirror': ...})",
    "serial.rfc2217": "an RFC 2217 mirror, or opening an rfc2217:// port",
    "filelock": "the first profile or capture write",
    "serial.tools.list_ports": "list_ports, the serial://ports resource or a port completion",
    "ctypes": "a watch on a device node (opening a system port)",
    "tomlkit": "reading or writing a profiles file that exists",
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
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    env.pop("SERIAL_MCP_CONFIG", None)
    out = subprocess.run(
        [sys.executable, "-c", before + _PROBE],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=True,
    )  # fmt: skip
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


# What a launch that publishes the kept tools (the second launch of the same code) leaves as well:
# the engine, for the first request that needs it (mcp/engine_loader.py).
DEFERRED_WHEN_KEPT = {
    "serial_mcp.engine.operations": "the first tool call, resource read or completion",
    "serial_mcp.engine.options": "the first tool call (the engine)",
    "serial_mcp.engine.results": "the first tool call (the engine)",
    "serial_mcp.mcp.tools": "the first tool call (the engine)",
    "serial_mcp.mcp.tool_arguments": "the first tool call (its lean argument model, ~10 ms to define)",
    "serial_mcp.core.framing": "the first tool call (the engine)",
    "anycrc": "the first tool call (the engine: checksums)",
}


def test_stdio_serve_imports_no_request_specific_module(tmp_path: Path) -> None:
    loaded = _modules_of_stdio_serve(tmp_path)  # the first launch: builds the tools, and keeps them
    assert "serial_mcp.mcp.server" in loaded  # the probe did reach the built server
    early = {m: why for m, why in DEFERRED.items() if m in loaded}
    assert not early, f"imported at start-up, before any request needs them: {early}"
    assert default_path().exists()  # beside the package's bytecode (issue 36.4), not in the user cache

    loaded = _modules_of_stdio_serve(tmp_path)  # the next: publishes the kept tools
    assert "serial_mcp.mcp.server" in loaded
    early = {m: why for m, why in {**DEFERRED, **DEFERRED_WHEN_KEPT}.items() if m in loaded}
    assert not early, f"imported by a launch with the kept tools, before any request needs them: {early}"


@pytest.mark.parametrize(
    ("request_code", "module"),
    [
        ("from serial_mcp.core.parsers import build_parser; build_parser({'type': 'gnss'})\n", "pyubx2"),
        ("from serial_mcp.core.parsers import build_parser; build_parser({'type': 'rtcm3'})\n", "pyrtcm"),
        ("from serial_mcp.core.screen import TerminalScreen; TerminalScreen(80, 24)\n", "pyte"),
        (
            "from serial_mcp.serial.firmware_elf import ElfScope, load_elf\n"
            "try:\n    load_elf('no-such.elf', ElfScope())\nexcept Exception:\n    pass\n",
            "elftools",
        ),
        (
            "from serial_mcp.serial.manager import open_scrubbed\n"
            "from serial_mcp.serial.sim import SimOpener\n"
            "from serial_mcp.core.settings import SerialSettings\n"
            "open_scrubbed(SimOpener(), 'sim://echo', SerialSettings()).close()\n",
            "serial_mcp.core.events.detector",
        ),
        ("from serial_mcp.serial.sim import device_opener; device_opener('esp32-rom')\n", "serial_mcp.serial.sim.esp32_rom"),
        ("from serial_mcp.serial.ports import list_system_ports; list_system_ports()\n", "serial.tools.list_ports"),
        (
            "import tempfile, pathlib\nfrom serial_mcp.store.captures import CaptureStore\n"
            "CaptureStore(pathlib.Path(tempfile.mkdtemp())).export('e.jsonl', [])\n",
            "filelock",
        ),
    ],
)
def test_the_request_that_needs_a_module_loads_it(tmp_path: Path, request_code: str, module: str) -> None:
    """The deferred import is still made, by the request that needs it (the probe can tell)."""
    assert module in _modules_of_stdio_serve(tmp_path, before=request_code)


_FIRST_USE_PROBE = """
import asyncio, json, sys, threading
import importlib.abc

seen = {}

class Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in ("pyubx2", "pyrtcm"):
            seen[name] = threading.current_thread() is threading.main_thread()
        return None

sys.meta_path.insert(0, Watch())
from pydantic import dataclasses as pd
from serial_mcp.mcp import tools
built = {}
real_rebuild = tools.rebuild_dataclass
def rebuild(cls, *a, **k):
    built[cls.__name__] = threading.current_thread() is threading.main_thread()
    return real_rebuild(cls, *a, **k)
tools.rebuild_dataclass = rebuild

from mcp import Client
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.system_open import SystemOpener

async def main():
    async with Client(build_server(ConnectionManager(SystemOpener()))) as c:
        opened = await c.call_tool("open", {"port": "loop://", "protocol": "gnss"})
        cid = opened.structured_content["connection_id"]
        await c.call_tool("read", {"connection_id": cid, "timeout_ms": 10})
asyncio.run(main())
print(json.dumps({"built": built, "imported": seen}))
"""


def test_first_use_work_runs_beside_the_loop(tmp_path: Path) -> None:
    """The options validators and the GNSS decoders, left by start-up for first use, are built and
    imported on a worker thread (``True`` = on the loop's thread), not on the event loop."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", _FIRST_USE_PROBE], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=120, check=True)  # fmt: skip
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    assert doc["built"] == {"OpenOptions": False, "ReadOptions": False}
    assert doc["imported"] == {"pyubx2": False, "pyrtcm": False}
