"""transact(steps=[{"micropython": script}]): run a 10-line script on a MicroPython board (raw-paste
with its flow control, as mpremote does) and get stdout and stderr back apart, in one call."""

from __future__ import annotations

import pytest
from mcp import Client

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.openers import default_opener
from tests.tool_calls import call, error
from tests.unit.test_sim_devices import SCRIPT, SCRIPT_STDERR, SCRIPT_STDOUT

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_script_output_and_traceback_come_back_apart() -> None:
    async with Client(build_server(ConnectionManager(default_opener()), port_lister=list)) as c:
        cid = (await call(c, "open", {"port": "sim://micropython"}))["connection_id"]
        r = await call(c, "transact", {"connection_id": cid, "steps": [{"micropython": SCRIPT}]})
        step = r["steps"][0]
        assert step["mode"] == "raw-paste"  # the flow-controlled path: the sim drops bytes beyond the window
        assert step["stdout"] == SCRIPT_STDOUT and step["stderr"] == SCRIPT_STDERR
        assert step["ok"] is False and r["steps_ok"] is False  # the script raised
        ok = await call(c, "transact", {"connection_id": cid, "steps": [{"micropython": "print('hi')"}]})
        assert ok["steps"][0]["stdout"] == "hi\r\n" and ok["steps_ok"] is True


async def test_a_running_program_is_interrupted_first_or_reported() -> None:
    async with Client(build_server(ConnectionManager(default_opener()), port_lister=list)) as c:
        cid = (await call(c, "open", {"port": "sim://micropython?state=running"}))["connection_id"]
        e = await error(c, "transact", {"connection_id": cid, "steps": [{"micropython": "print(1)", "interrupt": False}]})
        assert e["code"] == "not_in_repl" and "interrupt" in e["message"]
        r = await call(c, "transact", {"connection_id": cid, "steps": [{"micropython": "print(1)"}]})
        assert r["steps"][0]["stdout"] == "1\r\n"
