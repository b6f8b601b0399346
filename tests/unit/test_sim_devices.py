"""The clocked simulated devices (sim://slow-modem, sim://reboot-board, sim://micropython) over the real tools."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcp import Client

from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import InvalidArgument
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.openers import default_opener
from serial_mcp.serial.sim import SimOpener, micropython
from serial_mcp.serial.sim.slow_modem import ICCID, IMEI
from tests.firmware.agent import Agent

pytestmark = pytest.mark.anyio

OK = "\r\nOK\r\n"
AGENT_LATENCY_S = 3.0  # an agent thinking between open and its first read


@pytest.fixture
async def agent() -> AsyncIterator[Agent]:
    manager = ConnectionManager(default_opener())
    async with Client(build_server(manager)) as client:
        yield Agent(client)
    await manager.close_all()


async def opened(agent: Agent, port: str, **kw: Any) -> str:
    return str((await agent.call("open", {"port": port, **kw}))["connection_id"])


async def transact(agent: Agent, conn: str, data: str, **kw: Any) -> dict[str, Any]:
    r = await agent.call("transact", {"connection_id": conn, "data": data, "timeout_ms": 5000, **kw})
    read: dict[str, Any] = r["read"]
    return read


# --- sim://slow-modem ------------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_slow_modem_identity_imei_sim_and_signal_today(agent: Agent) -> None:
    """Issue 13 figure (a) with today's tools: one transact per command, each waiting for OK by match."""
    conn = await opened(agent, "sim://slow-modem")
    replies = {
        cmd: await transact(agent, conn, f"{cmd}\r", match=OK)
        for cmd in ("ATI", "AT+CGSN", "AT+CCID", "AT+CSQ")
    }
    assert all(r["stop_reason"] == "match" for r in replies.values())
    assert all(r["data"].startswith(f"{cmd}\r") for cmd, r in replies.items()), "the echo comes first"
    assert "Model: SM-150" in replies["ATI"]["data"]
    assert IMEI in replies["AT+CGSN"]["data"] and ICCID in replies["AT+CCID"]["data"]
    csq = replies["AT+CSQ"]["data"]
    assert csq.index("+CSQ: 23,99") < csq.index("+CREG: 1") < csq.index("OK"), "a URC inside the reply"
    print(f"issue 13 (a) today: {agent.tally()}")


@pytest.mark.slow
async def test_slow_modem_echo_can_be_turned_off(agent: Agent) -> None:
    conn = await opened(agent, "sim://slow-modem")
    assert (await transact(agent, conn, "ATE0\r", match=OK))["data"] == "ATE0\r" + OK
    assert (await transact(agent, conn, "AT\r", match=OK))["data"] == OK
    assert "ERROR" in (await transact(agent, conn, "AT+NOPE\r", match="ERROR"))["data"]


@pytest.mark.slow
async def test_slow_modem_reply_ends_on_ok_not_on_idle(agent: Agent) -> None:
    conn = await opened(agent, "sim://slow-modem", protocol="at_command")
    for cmd in ("ATI", "AT+CGSN"):  # gaps of 150 ms and 110 ms inside these replies
        read = await transact(agent, conn, f"{cmd}\r")
        assert read["stop_reason"] == "final", read
        assert read["frames"][-1]["parsed"].get("kind") in ("final", "result", "ok"), read["frames"][-1]


@pytest.mark.slow
async def test_slow_modem_urc_inside_a_reply_is_labelled(agent: Agent) -> None:
    conn = await opened(agent, "sim://slow-modem", protocol="at_command")
    read = await transact(agent, conn, "AT+CSQ\r", match="OK")
    kinds = {f["parsed"].get("kind") for f in read["frames"] if "CREG" in str(f["data"])}
    assert kinds == {"urc"}, read["frames"]


# --- sim://reboot-board ----------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_reboot_board_key_during_countdown_stops_at_the_loader(agent: Agent) -> None:
    conn = await opened(agent, "sim://reboot-board")
    r = await agent.call(
        "read", {"connection_id": conn, "match": "Hit any key to stop autoboot:  3", "timeout_ms": 5000}
    )
    assert "U-Boot 2024.01" in r["data"]
    await agent.call("write", {"connection_id": conn, "data": " "})
    r = await agent.call("read", {"connection_id": conn, "match": "=> ", "timeout_ms": 5000})
    assert r["stop_reason"] == "match" and "Starting kernel" not in r["data"]
    env = await transact(agent, conn, "printenv\r", match="=> ")
    assert env["data"].startswith("printenv\r\n") and "bootdelay=3" in env["data"]


@pytest.mark.slow
async def test_reboot_board_without_a_key_boots_to_the_shell(agent: Agent) -> None:
    conn = await opened(agent, "sim://reboot-board?bootdelay=1")
    r = await agent.call("read", {"connection_id": conn, "match": "\r\n# ", "timeout_ms": 10_000})
    assert r["stop_reason"] == "match"
    assert "autoboot:  1 \x08\x08\x08 0 " in r["data"] and "Starting kernel" in r["data"]
    assert "Linux sim-board" in (await transact(agent, conn, "uname -a\r", match="# "))["data"]


@pytest.mark.slow
async def test_reboot_board_reboots_on_command(agent: Agent) -> None:
    conn = await opened(agent, "sim://reboot-board?bootdelay=1")
    await agent.call("read", {"connection_id": conn, "match": "\r\n# ", "timeout_ms": 10_000})
    r = await transact(agent, conn, "reboot\r", match="stop autoboot")
    assert "reboot: Restarting system" in r["data"] and "U-Boot SPL" in r["data"]
    r = await transact(agent, conn, "\r", match="=> ")
    assert r["stop_reason"] == "match" and "Starting kernel" not in r["data"]


@pytest.mark.slow
async def test_reboot_board_standing_responder_stops_autoboot_for_a_late_agent(agent: Agent) -> None:
    conn = await opened(agent, "sim://reboot-board?bootdelay=2", respond=[{"on": "Hit any key", "send": " "}])
    await anyio.sleep(AGENT_LATENCY_S)  # the agent thinking: the countdown is over before its first read
    r = await agent.call(
        "read", {"connection_id": conn, "from": "buffer_start", "match": "=> ", "timeout_ms": 1000}
    )
    assert r["stop_reason"] == "match" and "Starting kernel" not in r["data"]


async def test_reboot_board_rejects_a_bad_bootdelay(agent: Agent) -> None:
    err = await agent.error("open", {"port": "sim://reboot-board?bootdelay=x"})
    assert err["code"] == "invalid_argument" and "bootdelay" in err["message"]


# --- sim://micropython -----------------------------------------------------------------------------------------

SCRIPT = """\
import time
readings = [21, 22, 23]
total = 0
for r in readings:
    total += r
    time.sleep_ms(10)
print("n", len(readings))
print(f"mean={total / len(readings):.1f}")
if total > 60:
    raise ValueError("too warm")
"""
SCRIPT_STDOUT = "n 3\r\nmean=22.0\r\n"
SCRIPT_STDERR = (
    'Traceback (most recent call last):\r\n  File "<stdin>", line 10, in <module>\r\nValueError: too warm\r\n'
)


async def test_micropython_friendly_repl_echoes_and_prints(agent: Agent) -> None:
    conn = await opened(agent, "sim://micropython")
    r = await agent.call("read", {"connection_id": conn, "match": ">>> ", "timeout_ms": 2000})
    assert r["data"].startswith("MicroPython v1.24.1")
    assert (await transact(agent, conn, "1 + 1\r", match=">>> "))["data"] == "1 + 1\r\n2\r\n>>> "
    assert (await transact(agent, conn, "print('hi')\r", match=">>> "))["data"] == "print('hi')\r\nhi\r\n>>> "
    assert "NameError" in (await transact(agent, conn, "nope\r", match=">>> "))["data"]


async def test_micropython_raw_repl_splits_stdout_and_stderr_today(agent: Agent) -> None:
    """Issue 13 figure (d) with today's tools: Ctrl-C Ctrl-A, then the script and Ctrl-D, split by hand."""
    conn = await opened(agent, "sim://micropython")
    raw = await transact(agent, conn, "\r\x03\x01", match="raw REPL; CTRL-B to exit\r\n>")
    assert raw["stop_reason"] == "match"
    r = await transact(agent, conn, SCRIPT + "\x04", match="\x04>")
    assert r["data"] == "OK" + SCRIPT_STDOUT + "\x04" + SCRIPT_STDERR + "\x04>"
    print(f"issue 13 (d) today: {agent.tally()}")
    assert (await transact(agent, conn, "\x02", match=">>> "))["data"].startswith("\r\nMicroPython")


@pytest.mark.slow
async def test_micropython_raw_paste_with_flow_control(agent: Agent) -> None:
    conn = await opened(agent, "sim://micropython")
    await transact(agent, conn, "\r\x03\x01", match="raw REPL; CTRL-B to exit\r\n>")
    hello = await transact(agent, conn, "\x05A\x01", max_bytes=5, read_encoding="hex")
    assert bytes.fromhex(hello["data"]) == b"R\x01" + micropython.WINDOW.to_bytes(2, "little") + b"\x01"
    code = SCRIPT.encode()
    credit, sent = 2 * micropython.WINDOW, 0
    while sent < len(code):  # as mpremote does: never more than the credit, one window per \x01
        if credit == 0:
            ack = await agent.call("read", {"connection_id": conn, "max_bytes": 1, "timeout_ms": 2000})
            assert ack["data"] == "\x01", ack
            credit += micropython.WINDOW
        chunk = code[sent : sent + credit]
        b64 = base64.b64encode(chunk).decode()
        await agent.call("write", {"connection_id": conn, "data": b64, "encoding": "base64"})
        sent, credit = sent + len(chunk), credit - len(chunk)
    r = await transact(agent, conn, "\x04", match="\x04>")
    acks_and_ack = r["data"][: r["data"].index("\x04")]
    assert set(acks_and_ack) <= {"\x01"}, "only window acks before the end-of-data ack"
    assert r["data"][len(acks_and_ack) :] == "\x04" + SCRIPT_STDOUT + "\x04" + SCRIPT_STDERR + "\x04>"


@pytest.mark.slow
async def test_micropython_raw_paste_without_flow_control_loses_bytes(agent: Agent) -> None:
    conn = await opened(agent, "sim://micropython")
    await transact(agent, conn, "\r\x03\x01", match="raw REPL; CTRL-B to exit\r\n>")
    await transact(agent, conn, "\x05A\x01", max_bytes=5, read_encoding="hex")
    r = await transact(agent, conn, SCRIPT + "\x04", match="\x04>")
    assert SCRIPT_STDOUT not in r["data"] and "Error" in r["data"], (
        "the overflowed script did not run as sent"
    )


@pytest.mark.slow
async def test_micropython_running_program_only_ctrl_c_gets_the_repl(agent: Agent) -> None:
    conn = await opened(agent, "sim://micropython?state=running")
    r = await agent.call("read", {"connection_id": conn, "match": "temp: ", "timeout_ms": 2000})
    assert r["stop_reason"] == "match"
    ignored = await transact(agent, conn, "\r\x01", match="raw REPL", timeout_ms=500)
    assert ignored["stop_reason"] != "match", "a running program does not enter the raw REPL"
    r = await transact(agent, conn, "\x03", match=">>> ")
    assert "KeyboardInterrupt" in r["data"] and "MicroPython v1.24.1" in r["data"]
    assert (await transact(agent, conn, "\x01", match="CTRL-B to exit\r\n>"))["stop_reason"] == "match"


def test_micropython_state_option_is_checked() -> None:
    with pytest.raises(InvalidArgument, match="state"):
        SimOpener().open("sim://micropython?state=asleep", SerialSettings())
