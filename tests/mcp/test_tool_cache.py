"""The tools' schemas kept between launches (mcp/tool_cache.py, issue 27's start-up).

A launch with a warm cache publishes exactly what a full build publishes, builds no argument model
until a tool is called, and then validates exactly as before; a stale, corrupt or foreign file is
a miss that rebuilds and rewrites it, never an error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver.tools import base as sdk_tool_base

from serial_mcp.mcp import tool_cache
from serial_mcp.mcp.server import build_server
from serial_mcp.mcp.tool_cache import DeferredArguments, ToolCache
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager

pytestmark = pytest.mark.anyio


def _server(cache: ToolCache | None) -> Any:
    opener = FakeOpener()
    opener.add("fake0", lambda data: b"\r\nOK\r\n" if data == b"AT\r" else None)
    return build_server(ConnectionManager(opener), port_lister=list, tool_cache=cache)


async def _listed(server: Any) -> list[dict[str, Any]]:
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in await server.list_tools()]


async def test_a_warm_cache_publishes_what_a_full_build_publishes(tmp_path: Path) -> None:
    cache_file = tmp_path / "tools.json"
    built = _server(ToolCache(cache_file))  # a miss: builds, then keeps
    assert cache_file.exists()
    kept = _server(ToolCache(cache_file))
    assert await _listed(kept) == await _listed(built) == await _listed(_server(None))


async def test_a_warm_cache_builds_no_argument_model_until_a_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache_file = tmp_path / "tools.json"
    _server(ToolCache(cache_file))
    built: list[str] = []
    real = sdk_tool_base.func_metadata  # type: ignore[attr-defined]  # the SDK module's own name

    def counting(fn: Any, *args: Any, **kwargs: Any) -> Any:
        built.append(fn.__name__)
        return real(fn, *args, **kwargs)

    monkeypatch.setattr(sdk_tool_base, "func_metadata", counting)
    monkeypatch.setattr(tool_cache, "func_metadata", counting)
    server = _server(ToolCache(cache_file))
    assert built == []  # start-up built none of the ~30 argument models
    assert all(isinstance(t.fn_metadata, DeferredArguments) for t in server._tool_manager.list_tools())
    async with Client(server) as client:
        bad = await client.call_tool("open", {"port": "fake0", "baud_rate": "fast"})
        assert bad.is_error and bad.structured_content is not None
        assert bad.structured_content["error"]["code"] == "invalid_argument"
        assert "baud_rate" in bad.structured_content["error"]["message"]
        opened = await client.call_tool("open", {"port": "fake0"})
        assert not opened.is_error, opened
        cid = opened.structured_content["connection_id"]
        reply = await client.call_tool("transact", {"connection_id": cid, "data": "AT\r", "match": "OK"})
        # a lean result: a match index means matched (the flag itself is left out)
        assert not reply.is_error and "match_index" in reply.structured_content["read"]
    assert sorted(set(built)) == ["open", "transact"]  # each on its first call, once


@pytest.mark.parametrize(
    "spoil",
    [
        lambda doc: {**doc, "fingerprint": "0" * 64},  # other code, other versions
        lambda doc: {**doc, "data": {**doc["data"], "tools": dict(list(doc["data"]["tools"].items())[1:])}},
        lambda doc: {**doc, "data": {**doc["data"], "tools": {**doc["data"]["tools"], "open": {}}}},  # edited
        lambda doc: {**doc, "data": {"tools": doc["data"]["tools"]}},  # no digest
        lambda doc: "not json {",
        lambda doc: [],
    ],
)
async def test_a_stale_or_corrupt_cache_is_a_miss_that_rebuilds(tmp_path: Path, spoil: Any) -> None:
    cache_file = tmp_path / "tools.json"
    _server(ToolCache(cache_file))
    doc = json.loads(cache_file.read_text())
    spoilt = spoil(doc)
    cache_file.write_text(spoilt if isinstance(spoilt, str) else json.dumps(spoilt))
    server = _server(ToolCache(cache_file))
    assert not any(isinstance(t.fn_metadata, DeferredArguments) for t in server._tool_manager.list_tools())
    assert await _listed(server) == await _listed(_server(None))
    assert json.loads(cache_file.read_text())["fingerprint"] == doc["fingerprint"]  # rewritten


async def test_an_unwritable_cache_directory_only_costs_the_build(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    server = _server(ToolCache(blocker / "tools.json"))  # its parent is a file: cannot be made
    assert await _listed(server) == await _listed(_server(None))


# A launch with the kept tools, in a process of its own (the engine must not be loaded before it):
# which thread imports the engine, when, and what the first call answers.
_WARM_PROBE = """
import asyncio, json, sys, threading
import importlib.abc

where = {}

class Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "serial_mcp.engine.operations":
            where["engine"] = "loop" if threading.current_thread() is threading.main_thread() else "worker"
        return None

sys.meta_path.insert(0, Watch())
from pathlib import Path
from mcp import Client
from serial_mcp.mcp.server import build_server
from serial_mcp.mcp.tool_cache import ToolCache
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager

def server(cache):
    opener = FakeOpener()
    opener.add("fake0", lambda data: b"OK" if data == b"AT" else None)
    return build_server(ConnectionManager(opener), port_lister=list, tool_cache=cache)

BAD = {"port": "fake0", "baud_rate": "fast"}

async def main(mode):
    cache = ToolCache(Path(sys.argv[1]))
    if cache.load() is None:
        server(cache)  # a miss: build and keep
        return {"cold": True}
    warm = server(cache)
    out = {"cold": False, "engine_after_build": "serial_mcp.engine.operations" in sys.modules}
    async with Client(warm) as c:
        if mode == "list":
            await c.list_tools()
            await warm.engine_tools.background_loaded()  # no call was made
            out["engine_after_list"] = "serial_mcp.engine.operations" in sys.modules
        out["bad"] = (await c.call_tool("open", BAD)).structured_content
        opened = await c.call_tool("open", {"port": "fake0"})
        cid = opened.structured_content["connection_id"]
        reply = await c.call_tool("transact", {"connection_id": cid, "data": "AT", "match": "OK"})
        out["matched"] = "match_index" in reply.structured_content["read"]
    async with Client(server(None)) as c:  # the engine is in now: a full build, for comparison
        out["bad_built"] = (await c.call_tool("open", BAD)).structured_content
    out["engine"] = where.get("engine")
    return out

print(json.dumps(asyncio.run(main(sys.argv[2]))))
"""


def _warm_probe(cache_file: Path, mode: str) -> dict[str, Any]:
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", _WARM_PROBE, str(cache_file), mode],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(root)},
        timeout=120, check=True,
    )  # fmt: skip
    doc: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return doc


@pytest.mark.parametrize("mode", ["call", "list"])
@pytest.mark.slow  # over a second: the full suite runs it, the fast lane does not
def test_a_warm_launch_loads_the_engine_beside_the_loop_when_first_needed(tmp_path: Path, mode: str) -> None:
    """Start-up with the kept tools imports none of the engine (issue 27: ~0.2 s of a launch). The
    first call loads it on a worker thread and answers exactly as a full build does, a refused
    argument included; a tools/list starts loading it in the background, before any call."""
    cache_file = tmp_path / "tools.json"
    assert _warm_probe(cache_file, mode) == {"cold": True}
    doc = _warm_probe(cache_file, mode)
    assert doc["cold"] is False and doc["engine_after_build"] is False
    assert doc["engine"] == "worker"
    assert doc["bad"] == doc["bad_built"] and doc["bad"]["error"]["code"] == "invalid_argument"
    assert doc["matched"] is True
    if mode == "list":
        assert doc["engine_after_list"] is True


async def test_a_second_server_in_a_process_reuses_the_built_tools_and_drives_its_own_devices() -> None:
    """Building a server is ~0.2 s of pydantic work per tool set; a later server of the same process
    takes the schemas and argument models the first one built (toolkit._BUILT), publishes exactly
    the same tools, validates the same, and each server's tools drive its own manager."""
    first, second = _server(None), _server(None)
    by_name = {t.name: t for t in first._tool_manager.list_tools()}
    again = second._tool_manager.list_tools()
    assert all(t.fn_metadata is by_name[t.name].fn_metadata for t in again)  # reused, not rebuilt
    assert await _listed(second) == await _listed(first)
    lone = FakeOpener()
    lone.add("lone0")
    third = build_server(ConnectionManager(lone), port_lister=list)
    async with Client(third) as client:
        assert not (await client.call_tool("open", {"port": "lone0"})).is_error
        refused = await client.call_tool("open", {"port": "fake0"})  # the other servers' device
        assert refused.is_error and refused.structured_content["error"]["code"] == "port_not_found"
        bad = await client.call_tool("open", {"port": "lone0", "baud_rate": "fast"})
        assert bad.structured_content["error"]["code"] == "invalid_argument"
