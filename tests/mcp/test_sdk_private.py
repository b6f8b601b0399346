"""The SDK's private names live in one module (mcp/sdk_private.py), verified on one SDK version;
on any other version the server serves through the SDK's public stdio path."""

from __future__ import annotations

import ast
import importlib
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer

import serial_mcp
from serial_mcp.mcp import sdk_private, stdio_serve

PACKAGE = Path(serial_mcp.__file__).parent
PRIVATE_ATTRIBUTES = {
    "_lowlevel_server",
    "_connection",
    "_claim_fd",
    "_UnownedTextWrapper",
    "_tool_manager",
    "_listeners",
}


def test_the_installed_sdk_is_the_one_sdk_private_was_verified_on() -> None:
    assert sdk_private.VERIFIED, (
        f"mcp {sdk_private.INSTALLED_MCP} is installed, sdk_private.py was verified on "
        f"{sdk_private.VERIFIED_MCP}: re-verify sdk_private.py (every name, and the gains in "
        "docs/architecture.md), then move VERIFIED_MCP and the pin together"
    )


def _exported(module: str, name: str) -> bool:
    """Is ``name`` of SDK module ``module`` public: listed in the ``__all__`` of that module or of a
    package above it (``mcp``, ``mcp.server``, ``mcp.server.mcpserver``, …), as the same object?"""
    thing = getattr(importlib.import_module(module), name, None)
    parts = module.split(".")
    for i in range(len(parts), 0, -1):
        owner = importlib.import_module(".".join(parts[:i]))
        if name in getattr(owner, "__all__", ()) and getattr(owner, name, None) is thing:
            return True
    return False


def _private_uses(path: Path) -> list[str]:
    """SDK names reached that the SDK does not export: an underscored module or name, a name no
    ``__all__`` lists, and (in ``mcp/``, whose objects are the SDK's) an underscored attribute of
    anything but ``self``/``cls``, directly or by ``getattr``."""
    found = []
    in_mcp = path.parent.name == "mcp"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "mcp":
            if any(part.startswith("_") for part in node.module.split(".")):
                found.append(f"{path.name}:{node.lineno}: from {node.module}")
            found += [
                f"{path.name}:{node.lineno}: {node.module}.{a.name}"
                for a in node.names
                if a.name.startswith("_") or not _exported(node.module, a.name)
            ]
        elif isinstance(node, ast.Import):
            found += [
                f"{path.name}:{node.lineno}: import {a.name}"
                for a in node.names
                if a.name.split(".")[0] == "mcp" and any(p.startswith("_") for p in a.name.split("."))
            ]
        elif isinstance(node, ast.Attribute) and node.attr in PRIVATE_ATTRIBUTES:
            found.append(f"{path.name}:{node.lineno}: .{node.attr}")
        elif in_mcp and isinstance(node, ast.Attribute) and _underscored(node.attr):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
        elif in_mcp and isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            named = (
                node.args[1]
                if node.func.id in ("getattr", "hasattr", "setattr") and len(node.args) > 1
                else None
            )
            if isinstance(named, ast.Constant) and isinstance(named.value, str) and _underscored(named.value):
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return found


def _underscored(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_the_leak_scan_sees_each_kind_of_leak(tmp_path: Path) -> None:
    mcp_dir = tmp_path / "mcp"
    mcp_dir.mkdir()
    leaky = mcp_dir / "leaky.py"
    leaky.write_text(
        "from mcp.server.context import HandlerResult\n"
        "from mcp.server import MCPServer\n"
        "def f(server, ctx):\n"
        "    server._tool_manager.list_tools()\n"
        "    return getattr(ctx.session, '_connection', None)\n"
    )
    found = _private_uses(leaky)
    assert sorted(use.split(":")[1] for use in found) == ["1", "4", "5"], found


@pytest.mark.slow  # over a second: the full suite runs it, the fast lane does not
def test_no_private_sdk_name_outside_sdk_private() -> None:
    found = [
        use
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "sdk_private.py"
        for use in _private_uses(path)
    ]
    assert not found, "reach the SDK's insides through mcp/sdk_private.py:\n" + "\n".join(found)
    assert _private_uses(PACKAGE / "mcp" / "sdk_private.py"), "the scan must see sdk_private's own names"


@pytest.mark.anyio
async def test_an_unverified_sdk_is_served_through_its_public_stdio_path(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from serial_mcp.mcp.server import build_server
    from serial_mcp.serial.fake import FakeOpener
    from serial_mcp.serial.manager import ConnectionManager

    monkeypatch.setattr(sdk_private, "VERIFIED", False)
    monkeypatch.setattr(sdk_private, "_warned", False)
    public_calls: list[MCPServer] = []
    original = MCPServer.run_stdio_async

    async def public(self: MCPServer) -> None:
        public_calls.append(self)
        await original(self)

    monkeypatch.setattr(MCPServer, "run_stdio_async", public)

    def no_screen(*_: Any) -> Any:
        raise AssertionError("the screened (private) path ran on an unverified SDK")

    monkeypatch.setattr(stdio_serve, "screened_stdio", no_screen)
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()

    class FakeStd:
        def __init__(self, fd: int, mode: str) -> None:
            self.buffer = os.fdopen(fd, mode, buffering=0)

    monkeypatch.setattr(sys, "stdin", FakeStd(in_r, "rb"))
    monkeypatch.setattr(sys, "stdout", FakeStd(out_w, "wb"))
    server = build_server(ConnectionManager(FakeOpener()))
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "list_connections", "arguments": {}},
        },
    ]
    out = bytearray()

    async def client() -> None:
        await anyio.to_thread.run_sync(
            os.write, in_w, "".join(json.dumps(r) + "\n" for r in requests).encode()
        )
        while out.count(b"\n") < 2:
            out.extend(await anyio.to_thread.run_sync(os.read, out_r, 1 << 16))
        os.close(in_w)

    with caplog.at_level(logging.WARNING, logger="serial_mcp.mcp.sdk_private"):
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(client)
                await stdio_serve.run_stdio(server)
    os.close(out_w)
    os.close(out_r)
    replies = [json.loads(line) for line in bytes(out).splitlines()]
    assert public_calls == [server]
    assert replies[1]["id"] == 2 and "connections" in json.dumps(replies[1]["result"])
    assert any("Re-verify serial_mcp/mcp/sdk_private.py" in r.getMessage() for r in caplog.records)
