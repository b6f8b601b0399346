"""Issue 39 item 2: a question to a port is one call. ``read``, ``write``, ``transact`` and
``capture_boot`` take ``port`` instead of ``connection_id``: they use the caller's own connection to
it, or open one through ``open``'s path (allowlist, read-only, ownership, profiles), held: named and
marked in every result, closed after an idle period unless ``open`` adopts it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import Client

from serial_mcp import messages
from serial_mcp.config import add_options, resolve
from serial_mcp.engine import held
from serial_mcp.engine import operations as ops
from serial_mcp.engine.access import Caller
from serial_mcp.engine.options import OpenOptions, TransactOptions
from serial_mcp.engine.services import Services
from serial_mcp.errors import SerialMcpError
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.openers import default_opener
from serial_mcp.serial.policy import PortPolicy, policy_opener
from tests.pty.devices import PtyDevice, echo
from tests.tool_calls import call, error, lean_call


def server(idle_s: float = 60.0, manager: ConnectionManager | None = None, **kw: Any) -> Any:
    manager = manager or ConnectionManager(default_opener())
    return build_server(manager, port_lister=list, held_idle_s=idle_s, **kw)


@pytest.fixture
def ptys() -> Iterator[list[PtyDevice]]:
    made: list[PtyDevice] = []
    yield made
    for dev in made:
        dev.close()


def closed_event(manager: ConnectionManager) -> tuple[anyio.Event, list[float]]:
    """An event set when a connection closes, and when (anyio's clock)."""
    done, at = anyio.Event(), []

    def observe(what: str, conn: Connection) -> None:
        if what == "close":
            at.append(anyio.current_time())
            done.set()

    manager.observers.append(observe)
    return done, at


async def text_of(c: Client, name: str, args: dict[str, Any]) -> str:
    r = await c.call_tool(name, args)
    assert not r.is_error, r.content
    return str(r.content[0].text)  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_transact_by_port_opens_a_held_connection_and_the_next_call_reuses_it() -> None:
    async with Client(server()) as c:
        first = await lean_call(c, "transact", {"port": "sim://modem", "data": "AT\r", "match": "OK"})
        assert first["read"]["matched"] if "matched" in first["read"] else first["read"]["match_index"] >= 0
        note = first["held"]
        cid = note.split()[0]
        assert cid.startswith("c") and "60 s" in note and "open" in note
        assert (await call(c, "list_connections", {}))["connections"][0]["connection_id"] == cid
        text = await text_of(c, "transact", {"port": "sim://modem", "data": "ATI\r", "match": "OK"})
        assert cid in text and "held" in text
        assert len((await call(c, "list_connections", {}))["connections"]) == 1  # reused, not reopened
        by_id = await lean_call(c, "write", {"connection_id": cid, "data": "AT\r"})  # by id: held too
        assert by_id["held"] == note
        got = await lean_call(c, "read", {"port": "sim://modem", "match": "OK", "timeout_ms": 2000})
        assert got["held"] == note and "OK" in got["data"]


@pytest.mark.anyio
async def test_read_write_and_capture_boot_by_port() -> None:
    async with Client(server()) as c:
        wrote = await lean_call(c, "write", {"port": "sim://echo", "data": "hello\n"})
        assert wrote["bytes_written"] == 6 and wrote["held"]
        got = await lean_call(c, "read", {"port": "sim://echo", "match": "hello", "timeout_ms": 2000})
        assert "hello" in got["data"]
        boot = await lean_call(
            c, "capture_boot", {"port": "sim://echo", "send": "boot!\n", "match": "boot!", "timeout_ms": 2000}
        )
        assert "boot!" in boot["read"]["data"] and boot["held"] == wrote["held"]


@pytest.mark.anyio
async def test_one_call_on_a_pty(ptys: list[PtyDevice]) -> None:
    dev = PtyDevice(echo).start()
    ptys.append(dev)
    async with Client(server()) as c:
        out = await lean_call(
            c, "transact", {"port": dev.path, "data": "ping\n", "match": "ping", "baud_rate": 9600}
        )
        assert "ping" in out["read"]["data"] and out["held"]
        cid = out["held"].split()[0]
        assert (await call(c, "get_status", {"connection_id": cid}))["settings"]["baud_rate"] == 9600
        again = await lean_call(c, "transact", {"port": dev.path, "data": "pong\n", "match": "pong"})
        assert again["held"].split()[0] == cid
        wrote = await lean_call(c, "write", {"port": dev.path, "data": "abc\n"})
        got = await lean_call(c, "read", {"port": dev.path, "match": "abc", "timeout_ms": 2000})
        assert wrote["connection_id"] == cid and "abc" in got["data"] and got["held"] == again["held"]
        await call(c, "close", {"connection_id": cid})  # close stays


@pytest.mark.anyio
async def test_neither_both_disagreeing_and_differing_settings_are_clear_errors() -> None:
    async with Client(server()) as c:
        neither = await error(c, "transact", {"data": "AT\r"})
        assert neither["code"] == "invalid_argument" and "port" in neither["message"]
        assert "connection_id" in neither["message"]
        cid = (await call(c, "open", {"port": "sim://modem"}))["connection_id"]
        await call(c, "open", {"port": "sim://echo"})
        both = await error(c, "read", {"connection_id": cid, "port": "sim://echo"})
        assert both["code"] == "invalid_argument" and cid in both["message"]
        same = await lean_call(c, "transact", {"connection_id": cid, "port": "sim://modem", "data": "AT\r"})
        assert "held" not in same  # opened with open: kept, not held
        baud = await error(c, "transact", {"port": "sim://modem", "data": "AT\r", "baud_rate": 9600})
        assert baud["code"] == "invalid_argument"
        assert "reconfigure" in baud["message"] and "close" in baud["message"] and cid in baud["message"]


@pytest.mark.anyio
async def test_open_adopts_a_held_connection() -> None:
    async with Client(server()) as c:
        note = (await lean_call(c, "write", {"port": "sim://echo", "data": "x"}))["held"]
        cid = note.split()[0]
        listed = (await lean_call(c, "list_connections", {}))["connections"]
        assert [x.get("held") for x in listed] == [note]  # marked wherever the connection is shown
        assert (await lean_call(c, "get_status", {"connection_id": cid}))["held"] == note
        assert "(held)" in await text_of(c, "list_connections", {})
        as_is = await error(c, "open", {"port": "sim://echo", "share": "write"})  # it is open already
        assert as_is["code"] == "invalid_argument" and "share" in as_is["message"]
        opened = await call(c, "open", {"port": "sim://echo"})
        assert opened["connection_id"] == cid  # the same connection, now kept
        after = await lean_call(c, "write", {"port": "sim://echo", "data": "y"})
        assert "held" not in after and after["connection_id"] == cid
        assert "held" not in (await lean_call(c, "get_status", {"connection_id": cid}))
        again = await error(c, "open", {"port": "sim://echo"})  # kept: a second open is "busy" as before
        assert again["code"] == "port_busy"


@pytest.mark.anyio
async def test_a_held_connection_closes_after_its_idle_time_and_each_call_restarts_it() -> None:
    idle = 0.4
    manager = ConnectionManager(default_opener())
    closed, at = closed_event(manager)
    async with Client(server(idle, manager)) as c:
        cid = (await lean_call(c, "write", {"port": "sim://echo", "data": "a"}))["held"].split()[0]
        await lean_call(c, "read", {"connection_id": cid, "timeout_ms": 200, "idle_ms": 200})
        last = anyio.current_time()  # the last call ended here: the idle clock starts again
        with anyio.fail_after(10):
            await closed.wait()
        assert at[0] - last >= idle - 0.1  # not from the write's end (0.2 s sooner)
        gone = await error(c, "get_status", {"connection_id": cid})
        assert gone["code"] == "connection_not_found"


@pytest.mark.anyio
async def test_read_only_mode_refuses_a_write_by_port_as_by_id() -> None:
    async with Client(server(read_only=True)) as c:
        by_port = await error(c, "write", {"port": "sim://echo", "data": "x"})
        cid = (await call(c, "open", {"port": "sim://echo"}))["connection_id"]
        by_id = await error(c, "write", {"connection_id": cid, "data": "x"})
        assert by_port["code"] == by_id["code"] == "read_only_mode"
        assert by_port["message"] == by_id["message"]
        refused = await error(c, "transact", {"port": "sim://modem", "data": "AT\r"})
        assert refused["code"] == "read_only_mode"
        ports = [x["port"] for x in (await call(c, "list_connections", {}))["connections"]]
        assert ports == ["sim://echo"]  # nothing was opened for the refused calls
        read = await lean_call(c, "read", {"port": "sim://echo", "timeout_ms": 0})  # reading is fine
        assert "held" not in read


@pytest.mark.anyio
async def test_the_allowlist_refuses_a_port_outside_it() -> None:
    opener = policy_opener(PortPolicy.of(allowlist=["/dev/ttyUSB*"]), list)
    async with Client(build_server(ConnectionManager(opener), port_lister=list)) as c:
        refused = await error(c, "transact", {"port": "sim://modem", "data": "AT\r"})
        assert refused["code"] == (await error(c, "open", {"port": "sim://modem"}))["code"] == "not_allowed"


def engine(idle_s: float = 60.0) -> Services:
    return Services(ConnectionManager(default_opener()), port_lister=list, held_idle_s=idle_s)


@pytest.mark.anyio
async def test_another_callers_connection_is_not_used() -> None:
    svc = engine()
    alice, bob = Caller("alice"), Caller("bob")
    try:
        await ops.invoke(ops.OPEN, svc, alice, None, OpenOptions("sim://modem"))
        with pytest.raises(SerialMcpError) as by_port:
            await ops.invoke(ops.TRANSACT, svc, bob, None, TransactOptions("AT\r", port="sim://modem"))
        with pytest.raises(SerialMcpError) as by_open:
            await ops.invoke(ops.OPEN, svc, bob, None, OpenOptions("sim://modem"))
        assert by_port.value.code == by_open.value.code == "port_busy"
        assert by_port.value.message == by_open.value.message
    finally:
        await svc.manager.close_all()


@pytest.mark.anyio
async def test_the_fixed_interface_for_identify() -> None:
    svc = engine(0.3)
    me = Caller.local()
    done, _ = closed_event(svc.manager)
    conn, opened = await held.port_connection(svc, me, "sim://echo", {"baud_rate": 9600}, protocol=None)
    assert opened and conn.settings.baud_rate == 9600
    note = held.held_note(svc, conn)
    assert note is not None and note.startswith(conn.id)
    again, opened_again = await held.port_connection(svc, me, "sim://echo", {})
    assert again is conn and not opened_again
    held.touch(svc, conn)
    with anyio.fail_after(10):
        await done.wait()
    assert held.held_note(svc, conn) is None and svc.manager.list() == []


def test_the_idle_time_is_a_setting() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    add_options(parser)
    assert resolve(parser.parse_args([]), {}).held_idle_s == 60.0
    assert resolve(parser.parse_args(["--held-idle-s", "5"]), {}).held_idle_s == 5.0
    assert resolve(parser.parse_args([]), {"SERIAL_MCP_HELD_IDLE_S": "2.5"}).held_idle_s == 2.5


def test_the_instructions_teach_the_one_call_path_first() -> None:
    text = messages.SERVER_INSTRUCTIONS
    assert "transact(port=" in text
    assert text.index("transact(port=") < text.index("open(")


@pytest.mark.anyio
async def test_two_calls_at_once_on_a_closed_port_share_one_held_connection() -> None:
    svc = engine()
    me = Caller.local()
    notes: list[str | None] = []

    async def ask() -> None:
        opts = TransactOptions("AT\r", port="sim://modem", match="OK", timeout_ms=2000)
        notes.append((await ops.invoke(ops.TRANSACT, svc, me, None, opts)).held)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            tg.start_soon(ask)
        assert notes[0] is not None and notes[0] == notes[1] and len(svc.manager.list()) == 1
    finally:
        await svc.manager.close_all()
    assert svc.held == {}  # closed: held no more


@pytest.mark.anyio
async def test_a_call_that_fails_after_opening_its_port_leaves_nothing_held() -> None:
    async with Client(server()) as c:
        bad = await error(c, "transact", {"port": "sim://echo", "data": "zz", "encoding": "hex"})
        assert bad["code"] == "invalid_argument"
        assert (await call(c, "list_connections", {}))["connections"] == []
