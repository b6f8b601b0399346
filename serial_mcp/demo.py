"""``serial-mcp demo``: a scripted agent session against a real ``serial-mcp`` server over stdio.

It spawns the server exactly as an MCP client would, then walks the normal path (list_ports →
open → transact → read → get_status → close) against a simulated device, printing each call and
its one-line result. Useful as a smoke test on a fresh machine with no hardware.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from serial_mcp import messages


def _steps(port: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("list_ports", {}),
        ("open", {"port": port, "baud_rate": 115200}),
        ("read", {"connection_id": port, "timeout_ms": 500}),
        ("transact", {"connection_id": port, "data": "ATI\r", "match": "OK"}),
        (
            "transact",
            {"connection_id": port, "data": "AT+CSQ\r", "match": {"pattern": "OK|ERROR", "mode": "regex"}},
        ),
        ("read", {"connection_id": port, "from": "buffer_start", "max_bytes": 32, "encoding": "hex"}),
        ("get_status", {"connection_id": port}),
        ("open", {"port": port, "baudrate": 9600}),
        ("close", {"connection_id": port}),
    ]


async def _run(port: str) -> int:
    params = StdioServerParameters(command=sys.executable, args=["-m", "serial_mcp"])
    failures = 0
    async with Client(params, read_timeout_seconds=30) as client:
        tools = await client.list_tools()
        print(messages.DEMO_TOOLS.format(n=len(tools.tools), names=", ".join(t.name for t in tools.tools)))
        for name, args in _steps(port):
            result = await client.call_tool(name, args)
            text = result.content[0].text if result.content and hasattr(result.content[0], "text") else ""
            mark = "error" if result.is_error else "ok"
            print(f"> {name} {json.dumps(args)}\n  [{mark}] {text}")
            expected_error = "baudrate" in args
            failures += int(bool(result.is_error) != expected_error)
    print(messages.DEMO_DONE if not failures else messages.DEMO_FAILED.format(n=failures))
    return 1 if failures else 0


def run_demo(port: str | None) -> int:
    return anyio.run(_run, port or "sim://modem")
