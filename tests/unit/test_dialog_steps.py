"""transact(steps=[...]): a login dialog or an AT init sequence in one call, stopping at the first
expect that did not arrive, each step's result returned."""

from __future__ import annotations

import pytest
from mcp import Client

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from tests.tool_calls import call, error

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def console(data: bytes) -> bytes | None:
    """A tiny login console: user → password → prompt → command output."""
    answers = {b"root\n": b"root\r\nPassword: ", b"secret\n": b"\r\n~ # ", b"uname -a\n": b"uname -a\r\nLinux box 6.1\r\n~ # "}
    return answers.get(data)


async def test_login_dialog_in_one_call() -> None:
    opener = FakeOpener()
    dev = opener.add("dev", console)
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
        steps = [
            {"send": "root\n", "expect": "Password:"},
            {"send": "secret\n", "expect": "# "},
            {"send": "uname -a\n", "expect": "# ", "timeout_ms": 3000},
        ]
        r = await call(c, "transact", {"connection_id": cid, "steps": steps, "timeout_ms": 3000})
        assert r["steps_ok"] is True and [s["ok"] for s in r["steps"]] == [True, True, True]
        assert "Linux box 6.1" in r["steps"][2]["read"]["data"]
        assert r["write"]["bytes_written"] == len(b"root\nsecret\nuname -a\n")
        assert bytes(dev.written) == b"root\nsecret\nuname -a\n"


async def test_dialog_stops_at_the_first_missed_expect() -> None:
    opener = FakeOpener()
    dev = opener.add("dev", console)
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
        steps = [
            {"send": "root\n", "expect": "Password:"},
            {"send": "wrong\n", "expect": "# ", "timeout_ms": 200},
            {"send": "uname -a\n", "expect": "# "},
        ]
        r = await call(c, "transact", {"connection_id": cid, "steps": steps})
        assert r["steps_ok"] is False and [s["ok"] for s in r["steps"]] == [True, False]
        assert bytes(dev.written) == b"root\nwrong\n"  # step 3 never ran


async def test_bad_steps_send_nothing() -> None:
    opener = FakeOpener()
    dev = opener.add("dev", console)
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
        for steps in ([], [{"send": "root\n"}, {"sned": "x"}], [{"send": "a", "keys": ["no-such-key"]}], "x"):
            e = await error(c, "transact", {"connection_id": cid, "steps": steps})
            assert e["code"] == "invalid_argument", steps
        e = await error(c, "transact", {"connection_id": cid, "data": "x", "steps": [{"send": "y"}]})
        assert e["code"] == "invalid_argument"
        assert bytes(dev.written) == b""


async def test_keys_in_transact_and_steps() -> None:
    opener = FakeOpener()
    dev = opener.add("dev", lambda d: b"^C\r\n# " if d.endswith(b"\x03") else None)
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
        r = await call(c, "transact", {"connection_id": cid, "keys": ["ctrl-c"], "match": "# "})
        assert r["read"]["matched"] and bytes(dev.written) == b"\x03"
        r = await call(c, "transact", {"connection_id": cid, "steps": [{"keys": ["ctrl-c"], "expect": "# "}]})
        assert r["steps_ok"] and bytes(dev.written) == b"\x03\x03"
