"""``serial-mcp demo``: a scripted agent session against a real ``serial-mcp`` server over stdio.

It spawns the server exactly as an MCP client would and walks the normal path — list_ports,
open, transact, a framed read with parsed NMEA, get_log, close — against replayed devices from
``captures/`` (an AT modem answering in respond mode, a GPS receiver), or the built-in simulated
modem when the samples are not at hand. With ``--port`` it talks to that port instead (AT commands).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import Client, StdioServerParameters

from serial_mcp import messages

Step = tuple[str, dict[str, Any], bool]  # tool, arguments, error expected


def _modem_steps(port: str, cid: str) -> list[Step]:
    return [
        ("open", {"port": port, "baud_rate": 115200}, False),
        ("transact", {"connection_id": cid, "data": "AT\r", "match": "OK"}, False),
        ("transact", {"connection_id": cid, "data": "ATE0\r", "match": "OK"}, False),
        (
            "transact",
            {"connection_id": cid, "data": "ATI", "protocol": "at_command", "frames": "parsed"},
            False,
        ),
        (
            "transact",
            {"connection_id": cid, "data": "AT+CPIN?", "protocol": "at_command", "frames": "parsed"},
            False,
        ),
        (
            "transact",
            {"connection_id": cid, "data": "AT+CSQ", "protocol": "at_command", "frames": "parsed"},
            False,
        ),
        ("open", {"port": port, "baudrate": 9600}, True),  # a typo: refused with the right name
        ("get_log", {"connection_id": cid, "limit": 4, "payloads": False}, False),
        ("close", {"connection_id": cid}, False),
    ]


def _gps_steps(port: str, cid: str) -> list[Step]:
    return [
        ("open", {"port": port, "protocol": "nmea0183"}, False),
        ("read", {"connection_id": cid, "max_frames": 4, "timeout_ms": 3000, "frames": "parsed"}, False),
        (
            "read",
            {"connection_id": cid, "max_frames": 20, "match": "GGA", "timeout_ms": 3000, "frames": "parsed"},
            False,
        ),
        ("get_status", {"connection_id": cid}, False),
        ("close", {"connection_id": cid}, False),
    ]


def plan(port: str | None, captures: Path) -> list[Step]:
    """The session to run: the given port, the replayed samples, or the simulator."""
    steps: list[Step] = [("list_ports", {}, False)]
    if port is not None:
        return steps + _modem_steps(port, "c1")
    modem = captures / "at-modem-session.jsonl"
    gps = captures / "gps-quectel-l76k.jsonl"
    if modem.is_file() and gps.is_file():
        steps += _modem_steps(f"replay://{modem}?mode=respond", "c1")
        steps += _gps_steps(f"replay://{gps}?speed=4", "c2")
        return steps
    return steps + _modem_steps("sim://modem", "c1")


async def _run(port: str | None, out: TextIO, server_flags: Sequence[str]) -> int:
    # the settings go as flags: the SDK starts the server with a bare environment (no SERIAL_MCP_*)
    params = StdioServerParameters(command=sys.executable, args=["-m", "serial_mcp", *server_flags])
    steps = plan(port, Path.cwd() / "captures")
    failures = 0
    async with Client(params, read_timeout_seconds=30) as client:
        tools = await client.list_tools()
        say(out, messages.DEMO_TOOLS.format(n=len(tools.tools), names=", ".join(t.name for t in tools.tools)))
        for name, args, error_expected in steps:
            result = await client.call_tool(name, args)
            text = result.content[0].text if result.content and hasattr(result.content[0], "text") else ""
            mark = "error" if result.is_error else "ok"
            say(out, f"> {name} {json.dumps(args)}\n  [{mark}] {text}")
            failures += int(bool(result.is_error) != error_expected)
    say(out, messages.DEMO_DONE if not failures else messages.DEMO_FAILED.format(n=failures))
    return 1 if failures else 0


def say(out: TextIO, line: str) -> None:
    out.write(line + "\n")
    out.flush()


def run_demo(port: str | None, out: TextIO, server_flags: Sequence[str] = ()) -> int:
    """``out`` is the command's own output stream (the CLI passes stdout; this is not the server).
    ``server_flags`` give the server the demo's own settings (``config.server_flags``: read-only,
    allowlist …), so the demo opens ports under the policy it was started with."""
    return anyio.run(_run, port, out, server_flags)
