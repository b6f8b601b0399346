"""The tools' schemas kept between launches (mcp/tool_cache.py, issue 27's start-up).

A launch with a warm cache publishes exactly what a full build publishes, builds no argument model
until a tool is called, and then validates exactly as before; a stale, corrupt or foreign file is
a miss that rebuilds and rewrites it, never an error.
"""

from __future__ import annotations

import json
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
        lambda doc: {**doc, "data": {k: v for k, v in list(doc["data"].items())[1:]}},  # a tool short
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
