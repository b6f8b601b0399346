"""Small defects found by agents at work: each with the call that showed it."""

from __future__ import annotations

import os
from typing import Any

import pytest
from mcp import Client

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.ports import PortInfo
from serial_mcp.serial.system_open import SystemOpener
from tests.tool_calls import call, error

pytestmark = pytest.mark.anyio


def one_port() -> list[PortInfo]:
    return [PortInfo("dev", "ttyS0 serial", None, None, None, None, None, None, None, None, "native")]


@pytest.mark.parametrize("port", ["", "   ", "a", "s"])
async def test_empty_or_one_letter_port_never_picks_a_port(port: str) -> None:
    opener = FakeOpener()
    opener.add("dev")
    manager = ConnectionManager(opener)
    async with Client(build_server(manager, port_lister=one_port)) as c:
        e = await error(c, "open", {"port": port})
        assert e["code"] in ("invalid_argument", "port_not_found"), e
        assert manager.list() == []


async def test_open_virtual_ports_are_listed_and_open_names_its_protocol() -> None:
    from serial_mcp.serial.openers import default_opener

    async with Client(build_server(ConnectionManager(default_opener()), port_lister=list)) as c:
        r = await c.call_tool("open", {"port": "sim://modem", "protocol": "at_command"})
        assert not r.is_error and "protocol at_command" in r.content[0].text  # type: ignore[union-attr]
        ports = await call(c, "list_ports", {})
        assert [(p["name"], p["transport"], p["open_as"]) for p in ports["ports"]] == [("sim://modem", "virtual", "c1")]


@pytest.mark.slow
async def test_dtr_rts_and_break_on_a_pty_are_unsupported_not_io_errors() -> None:
    master, slave = os.openpty()
    try:
        async with Client(build_server(ConnectionManager(SystemOpener()))) as c:
            cid = (await call(c, "open", {"port": os.ttyname(slave)}))["connection_id"]
            calls: list[tuple[str, dict[str, Any]]] = [
                ("set_dtr_rts", {"dtr": False}),
                ("send_break", {"duration_ms": 10}),
            ]
            for tool, args in calls:
                e = await error(c, tool, {"connection_id": cid, **args})
                assert e["code"] == "not_supported", e
            status = await call(c, "get_status", {"connection_id": cid})
            assert status["state"] == "open"  # the port is fine
    finally:
        os.close(master)
        os.close(slave)


@pytest.mark.slow
async def test_compute_checksum_gives_the_wire_bytes() -> None:
    async with Client(build_server(ConnectionManager(FakeOpener()))) as c:
        r = await call(c, "compute_checksum", {"data": "010300000002", "encoding": "hex", "algorithm": "crc16_modbus", "byte_order": "little"})
        assert r["checksum_hex"] == "0bc4" and r["wire_hex"] == "c40b"


@pytest.mark.slow
async def test_delete_profile_is_marked_destructive() -> None:
    async with Client(build_server(ConnectionManager(FakeOpener()))) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert tools["delete_profile"].annotations.destructive_hint is True  # type: ignore[union-attr]


@pytest.mark.slow
async def test_record_stops_by_itself_and_gives_its_absolute_path(tmp_path: object) -> None:
    from pathlib import Path

    import anyio

    from serial_mcp.store.captures import CaptureStore

    opener = FakeOpener()
    dev = opener.add("dev")
    store = CaptureStore(Path(str(tmp_path)))
    async with Client(build_server(ConnectionManager(opener), captures=store)) as c:
        cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
        r = await call(c, "record", {"connection_id": cid, "action": "start", "path": "s.jsonl", "duration_ms": 200})
        assert r["recording"] and r["absolute_path"] == str(Path(str(tmp_path)) / "s.jsonl")
        dev.feed(b"hello\n")
        with anyio.fail_after(5):
            while (await call(c, "record", {"connection_id": cid}))["recording"]:
                await anyio.sleep(0.05)
        assert b"hello" in (Path(str(tmp_path)) / "s.jsonl").read_bytes() or "68656c6c6f" in (Path(str(tmp_path)) / "s.jsonl").read_text()


@pytest.mark.slow
async def test_a_replay_that_reached_its_end_says_so() -> None:
    import anyio

    from serial_mcp.serial.openers import default_opener

    async with Client(build_server(ConnectionManager(default_opener()), port_lister=list)) as c:
        cid = (await call(c, "open", {"port": "replay://captures/at-modem-session.jsonl?mode=instant"}))["connection_id"]
        with anyio.fail_after(5):
            while not (await call(c, "get_status", {"connection_id": cid}))["replay"]["finished"]:
                await anyio.sleep(0.05)


@pytest.mark.parametrize(
    ("protocol", "data", "sent"),
    [
        ("at_command", "AT\r", b"AT\r"),
        ("at_command", "AT", b"AT\r"),
        ("grbl", "$$\n", b"$$\n"),
        ("json_lines", '{"a":1}\n', b'{"a":1}\n'),
        ("modbus_ascii", ":010300000002FA\r\n", b":010300000002FA\r\n"),
    ],
)
@pytest.mark.slow
async def test_presets_do_not_frame_an_already_framed_write_again(protocol: str, data: str, sent: bytes) -> None:
    opener = FakeOpener()
    dev = opener.add("dev")
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "dev", "protocol": protocol}))["connection_id"]  # opens (modbus_ascii did not)
        await call(c, "write", {"connection_id": cid, "data": data})
        assert bytes(dev.written) == sent


@pytest.mark.slow
async def test_reconnect_gives_up_on_a_far_end_that_accepts_and_drops_at_once() -> None:
    """ser2net up, its device gone: every reopen succeeds and EOFs at once. That is not "back":
    the attempt counter carries over and the policy gives up after max_attempts."""
    import anyio

    opener = FakeOpener()
    dev = opener.add("dev")
    async with Client(build_server(ConnectionManager(opener))) as c:
        policy = {"initial_delay_ms": 5, "max_delay_ms": 5, "max_attempts": 3}
        cid = (await call(c, "open", {"port": "dev", "reconnect": policy}))["connection_id"]
        dev.unplug(eof=True, gone=False)  # reopening works, reading ends at once
        with anyio.fail_after(10):
            r = await call(c, "read", {"connection_id": cid, "timeout_ms": 60_000, "match": "never"})
        assert r["stop_reason"] == "disconnected"
        status = await call(c, "get_status", {"connection_id": cid})
        assert status["state"] == "disconnected" and status["reconnects"] <= 3
