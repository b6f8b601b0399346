"""``serial-mcp demo``: a scripted agent session against a real ``serial-mcp`` server over stdio.

It spawns the server exactly as an MCP client would and walks the normal path — list_ports,
open, transact, a framed read with parsed NMEA, get_log, close — against replayed devices from
``captures/`` (an AT modem answering in respond mode, a GPS receiver), or the built-in simulated
modem when the samples are not at hand. With ``--port`` it talks to that port instead (AT commands).

Every step checks its result (a ``match`` matched, an AT command ended in ``OK``, frames came, the
typo was refused as ``invalid_argument``): the first that does not stops the demo with exit status 1,
naming the step and why (issue 37: a demo that cannot fail proves nothing).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import Client, StdioServerParameters

import serial_mcp
from serial_mcp import messages
from serial_mcp.mcp import sdk_private

CID = "{cid}"  # the connection id the last open returned, filled in when the step runs


@dataclass(frozen=True)
class Step:
    """One call of the session and what it must give: a result the check passes (None: passed,
    else the reason it failed), or the tool error ``error`` names."""

    tool: str
    args: dict[str, Any]
    check: Callable[[dict[str, Any]], str | None] = lambda _r: None
    error: str | None = None  # the error code the call must be refused with

    def label(self, n: int) -> str:
        return messages.DEMO_STEP.format(n=n, tool=self.tool, args=json.dumps(self.args))


def _read_of(result: dict[str, Any]) -> dict[str, Any]:
    read = result.get("read", result)
    return read if isinstance(read, dict) else {}


def matched(result: dict[str, Any]) -> str | None:
    read = _read_of(result)
    stop = read.get("stop_reason")
    return (
        None if stop == "match" else messages.DEMO_NO_MATCH.format(stop=stop, data=read.get("data", "")[:80])
    )


def final_ok(result: dict[str, Any]) -> str | None:
    finals = [
        f["parsed"] for f in _read_of(result).get("frames", []) if f.get("parsed", {}).get("kind") == "final"
    ]
    if finals and finals[-1].get("success") is True:
        return None
    got = (
        finals[-1].get("status")
        if finals
        else f"no final result code (stop={_read_of(result).get('stop_reason')})"
    )
    return messages.DEMO_NOT_OK.format(got=got)


def has_frames(result: dict[str, Any]) -> str | None:
    return (
        None
        if _read_of(result).get("frames")
        else messages.DEMO_NO_FRAMES.format(stop=_read_of(result).get("stop_reason"))
    )


def has_events(result: dict[str, Any]) -> str | None:
    return None if result.get("events") else messages.DEMO_NO_EVENTS


def opened(result: dict[str, Any]) -> str | None:
    return None if result.get("connection_id") else messages.DEMO_NO_CONNECTION


def _modem_steps(port: str) -> list[Step]:
    at = {"protocol": "at_command", "frames": "parsed"}
    return [
        Step("open", {"port": port, "baud_rate": 115200}, opened),
        Step("transact", {"connection_id": CID, "data": "AT\r", "match": "OK"}, matched),
        Step("transact", {"connection_id": CID, "data": "ATE0\r", "match": "OK"}, matched),
        Step("transact", {"connection_id": CID, "data": "ATI", **at}, final_ok),
        Step("transact", {"connection_id": CID, "data": "AT+CPIN?", **at}, final_ok),
        Step("transact", {"connection_id": CID, "data": "AT+CSQ", **at}, final_ok),
        Step("open", {"port": port, "baudrate": 9600}, error="invalid_argument"),  # a typo: the right name
        Step("get_log", {"connection_id": CID, "limit": 4, "payloads": False}, has_events),
        Step("close", {"connection_id": CID}),
    ]


def _gps_steps(port: str) -> list[Step]:
    frames = {"frames": "parsed", "timeout_ms": 3000}
    return [
        Step("open", {"port": port, "protocol": "nmea0183"}, opened),
        Step("read", {"connection_id": CID, "max_frames": 4, **frames}, has_frames),
        Step("read", {"connection_id": CID, "max_frames": 20, "match": "GGA", **frames}, matched),
        Step("get_status", {"connection_id": CID}),
        Step("close", {"connection_id": CID}),
    ]


def plan(port: str | None, captures: Path) -> list[Step]:
    """The session to run: the given port, the replayed samples, or the simulator."""
    steps: list[Step] = [Step("list_ports", {})]
    if port is not None:
        return steps + _modem_steps(port)
    modem = captures / "at-modem-session.jsonl"
    gps = captures / "gps-quectel-l76k.jsonl"
    if modem.is_file() and gps.is_file():
        steps += _modem_steps(f"replay://{modem}?mode=respond")
        steps += _gps_steps(f"replay://{gps}?speed=4")
        return steps
    return steps + _modem_steps("sim://modem")


def _filled(args: dict[str, Any], cid: str) -> dict[str, Any]:
    return {k: cid if v == CID else v for k, v in args.items()}


def verdict(step: Step, is_error: bool, result: dict[str, Any]) -> str | None:
    """None when the call gave what the step expects; else why not."""
    if step.error is not None:
        code = result.get("error", {}).get("code") if isinstance(result.get("error"), dict) else None
        return None if is_error and code == step.error else messages.DEMO_NOT_REFUSED.format(code=step.error)
    if is_error:
        err = result.get("error")
        return messages.DEMO_ERROR.format(error=err.get("message") if isinstance(err, dict) else err)
    return step.check(result)


async def _run(port: str | None, out: TextIO, server_flags: Sequence[str]) -> int:
    # the settings go as flags: the SDK starts the server with a bare environment (no SERIAL_MCP_*);
    # the server is this very package (a checkout run with PYTHONPATH demonstrates itself, not an install)
    env = {**sdk_private.get_default_environment(), "PYTHONPATH": str(Path(serial_mcp.__file__).parents[1])}
    params = StdioServerParameters(command=sys.executable, args=["-m", "serial_mcp", *server_flags], env=env)
    steps = plan(port, Path.cwd() / "captures")
    cid = ""
    async with Client(params, read_timeout_seconds=30) as client:
        tools = await client.list_tools()
        say(out, messages.DEMO_TOOLS.format(n=len(tools.tools), names=", ".join(t.name for t in tools.tools)))
        for n, step in enumerate(steps, 1):
            args = _filled(step.args, cid)
            result = await client.call_tool(step.tool, args)
            text = result.content[0].text if result.content and hasattr(result.content[0], "text") else ""
            content = result.structured_content if isinstance(result.structured_content, dict) else {}
            mark = "error" if result.is_error else "ok"
            say(out, f"> {step.tool} {json.dumps(args)}\n  [{mark}] {text}")
            why = verdict(step, bool(result.is_error), content)
            if why is not None:
                say(out, messages.DEMO_FAILED.format(step=Step(step.tool, args).label(n), why=why))
                return 1
            if step.tool == "open" and step.error is None:
                cid = str(content["connection_id"])
    say(out, messages.DEMO_DONE.format(n=len(steps)))
    return 0


def say(out: TextIO, line: str) -> None:
    out.write(line + "\n")
    out.flush()


def run_demo(port: str | None, out: TextIO, server_flags: Sequence[str] = ()) -> int:
    """``out`` is the command's own output stream (the CLI passes stdout; this is not the server).
    ``server_flags`` give the server the demo's own settings (``config.server_flags``: read-only,
    allowlist …), so the demo opens ports under the policy it was started with."""
    return anyio.run(_run, port, out, server_flags)
