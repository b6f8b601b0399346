"""A serving process moves its start-up heap out of the collector's way (``gc.freeze``).

The CLI's ``serve`` freezes what is alive before it serves and again once the engine and its tools are made
(mcp/engine_loader.py): modules, classes, schemas and validators that live as long as the process. Without it
a full collection walks them all on the event loop (69 ms once in 500 transacts here). A library user's or a
test's process is never frozen: only ``serve`` asks for it.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each launch is a Python of its own (~2 s): the full suite runs them

_PROBE = """
import gc, json, sys
import anyio
from serial_mcp import cli

def stop_here(fn, server, *args):  # where serve() would start serving: load the engine as a call would
    before = gc.get_freeze_count()
    loader = getattr(server, "engine_tools", None)  # a server publishing kept tools loads its engine later
    if loader is not None:
        loader.functions()
    print(json.dumps([before, gc.get_freeze_count(), len(gc.get_objects())]))

anyio.run = stop_here
sys.exit(cli.main([]))
"""


def _launch(tmp_path: Path) -> tuple[int, int, int]:
    root = Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "PYTHONPATH": str(root),
        "SERIAL_MCP_CAPTURE_DIR": str(tmp_path / "captures"),
        "SERIAL_MCP_PROFILES": str(tmp_path / "profiles.toml"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),  # the kept tools: this test's own
    }
    env.pop("SERIAL_MCP_CONFIG", None)
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
        check=True,
    )  # fmt: skip
    before, after, tracked = json.loads(out.stdout.strip().splitlines()[-1])
    return before, after, tracked


def test_serve_freezes_the_start_up_heap_and_again_once_the_engine_is_loaded(tmp_path: Path) -> None:
    # the first launch builds the tools (the engine with them) and keeps them
    before, _, _ = _launch(tmp_path)
    assert before > 10_000
    before, after, tracked = _launch(tmp_path)  # the next publishes the kept tools: the engine loads later
    assert before > 10_000
    assert after > before  # the engine's modules and the tools made from them, frozen when made
    assert tracked < after // 4  # what a full collection still walks: a fraction of the heap


def test_a_library_process_is_not_frozen() -> None:
    assert gc.get_freeze_count() == 0  # this test process built servers and engines: none froze it
