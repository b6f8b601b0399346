"""A real ``serial-mcp`` subprocess over stdio: both eras, a PTY round trip, and a clean stdout."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.pty.devices import AtResponder, PtyDevice
from tests.raw_rpc import INITIALIZE, INITIALIZED, server_env

pytestmark = [pytest.mark.anyio, pytest.mark.stdio, pytest.mark.slow]


def server_params() -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "serial_mcp"], env=server_env())


@pytest.fixture
def at_device() -> Iterator[PtyDevice]:
    dev = PtyDevice(AtResponder()).start()
    yield dev
    dev.close()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_pty_round_trip_over_stdio(mode: str, at_device: PtyDevice) -> None:
    async with Client(server_params(), mode=mode, read_timeout_seconds=60) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert {"open", "read", "write", "transact", "close"} <= names
        opened = await c.call_tool("open", {"port": at_device.path})
        assert not opened.is_error, opened.content
        cid = opened.structured_content["connection_id"]
        r = await c.call_tool(
            "transact",
            {"connection_id": cid, "data": "AT+ECHO=hi\r", "match": "OK\r\n", "timeout_ms": 10_000},
        )
        assert not r.is_error, r.content
        assert r.structured_content["read"]["data"] == "\r\nhi\r\nOK\r\n"
        bad = await c.call_tool("read", {"connection_id": cid, "max_bytes": -1})
        assert bad.is_error and bad.structured_content["error"]["code"] == "invalid_argument"
        missing = await c.call_tool("open", {"port": "/dev/no-such-tty"})
        assert missing.is_error and missing.structured_content["error"]["code"] == "port_not_found"
        closed = await c.call_tool("close", {"connection_id": cid})
        assert not closed.is_error


def test_stdout_carries_only_json_rpc(at_device: PtyDevice) -> None:
    """Raw newline-delimited JSON-RPC in; every stdout line must be a JSON-RPC message, logs on stderr."""
    requests: list[dict[str, Any]] = [
        INITIALIZE,
        INITIALIZED,
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "open", "arguments": {"port": at_device.path}},
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {
                "name": "transact",
                "arguments": {"connection_id": "c1", "data": "AT\r", "match": "OK"},
            },
        },
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "open", "arguments": {"port": "/dev/no-such-tty"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 6,
            "method": "tools/call",
            "params": {"name": "close", "arguments": {"connection_id": "c1"}},
        },
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "serial_mcp", "--log-level", "DEBUG"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin and proc.stdout
    responses: dict[int, dict[str, Any]] = {}
    lines: list[bytes] = []
    for msg in requests:
        proc.stdin.write(json.dumps(msg).encode() + b"\n")
        proc.stdin.flush()
        if "id" not in msg:
            continue
        while (
            msg["id"] not in responses
        ):  # responses may interleave with nothing else: read until ours arrives
            line = proc.stdout.readline()
            assert line, "server closed stdout early"
            lines.append(line)
            parsed = json.loads(line)
            assert parsed.get("jsonrpc") == "2.0"
            if "id" in parsed:
                responses[parsed["id"]] = parsed
    rest, err = proc.communicate(timeout=30)  # closes stdin: the server must exit cleanly
    for line in rest.splitlines():
        assert json.loads(line).get("jsonrpc") == "2.0"
    assert proc.returncode == 0
    assert responses[4]["result"]["structuredContent"]["read"]["data"] == "\r\nOK"
    assert responses[5]["result"]["isError"] is True
    assert b"opened" in err or b"DEBUG" in err, "logs go to stderr"
