"""The MCP surface in-process, in both protocol eras, over the fake opener."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.ports import PortInfo
from tests.tool_calls import full

pytestmark = pytest.mark.anyio

CORE_TOOLS = {
    "list_ports",
    "list_connections",
    "open",
    "close",
    "get_status",
    "read",
    "write",
    "transact",
    "flush",
}


def modem(data: bytes) -> bytes | None:
    return b"\r\nOK\r\n" if data == b"AT\r" else b"\r\nERROR\r\n"


def fake_ports() -> list[PortInfo]:
    return [
        PortInfo(
            "fake0",
            "FT232R USB UART",
            "USB VID:PID=0403:6001",
            "0403",
            "6001",
            "A10K3Z",
            "FTDI",
            "FT232R",
            None,
            "1-1",
            "usb",
        )
    ]


@pytest.fixture(params=["auto", "legacy"])
async def client(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Client, FakeOpener]]:
    opener = FakeOpener()
    opener.add("fake0", modem)
    server = build_server(ConnectionManager(opener), port_lister=fake_ports)
    async with Client(server, mode=request.param) as c:
        yield c, opener


async def call(c: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    r = await c.call_tool(name, args)
    assert not r.is_error, r.content
    assert isinstance(r.structured_content, dict), r.structured_content
    text = r.content[0].text  # type: ignore[union-attr]
    assert "\n" not in text, "the human text is one line"
    return full(name, r.structured_content)  # lean results (issue 26) read back whole


async def error(c: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    r = await c.call_tool(name, args)
    assert r.is_error
    assert r.structured_content is not None
    err: dict[str, Any] = r.structured_content["error"]
    assert err["code"] and err["message"]
    return err


async def test_tools_listed_with_annotations_and_schemas(client: tuple[Client, FakeOpener]) -> None:
    c, _ = client
    tools = (await c.list_tools()).tools
    assert {t.name for t in tools} >= CORE_TOOLS
    for t in tools:
        assert t.title and t.description and t.output_schema and t.annotations is not None
        # read-only tools say so; every other tool states whether it is destructive (the default is true)
        assert t.annotations.read_only_hint is True or t.annotations.destructive_hint is not None
    by_name = {t.name: t for t in tools}
    assert by_name["list_ports"].annotations.read_only_hint is True  # type: ignore[union-attr]
    assert by_name["write"].annotations.destructive_hint is True  # type: ignore[union-attr]
    assert "from" in by_name["read"].input_schema["properties"]
    size = len(json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]))
    # issues 23 and 26: everything new this round fits in 32 KB (the stricter of their two bounds)
    assert size < 34_000, f"tools/list is {size} bytes"


async def test_normal_path(client: tuple[Client, FakeOpener]) -> None:
    c, opener = client
    ports = await call(c, "list_ports", {})
    assert ports["ports"][0]["vid"] == "0403" and ports["ports"][0]["serial_number"] == "A10K3Z"
    opened = await call(c, "open", {"port": "fake0", "baud_rate": 9600, "parity": "even"})
    cid = opened["connection_id"]
    assert opened["settings"]["parity"] == "even" and opened["baud_rate"] == 9600
    opener.devices["fake0"].feed(b"READY\r\n")
    first = await call(c, "read", {"connection_id": cid, "match": "READY", "timeout_ms": 5000})
    assert first["data"] == "READY" and first["matched"] and first["match_index"] == 0
    tx = await call(c, "transact", {"connection_id": cid, "data": "AT\r", "match": "OK", "timeout_ms": 5000})
    assert tx["read"]["data"] == "\r\nOK" and tx["read"]["stop_reason"] == "match"
    assert tx["mark_offset"] == 7 and tx["write"]["bytes_written"] == 3
    assert bytes(opener.devices["fake0"].written) == b"AT\r"
    w = await call(c, "write", {"connection_id": cid, "data": "41 54 0d", "encoding": "hex"})
    assert w["bytes_written"] == 3
    status = await call(c, "get_status", {"connection_id": cid})
    assert status["state"] == "open" and status["tx_bytes"] == 6 and status["cts"] is None
    assert set(status["cursors"]) == {"default"}
    conns = await call(c, "list_connections", {})
    assert conns["connections"][0]["connection_id"] == cid
    hexread = await call(c, "read", {"connection_id": cid, "from": 0, "max_bytes": 5, "encoding": "hex"})
    assert hexread["data"] == "5245414459" and hexread["encoding"] == "hex"
    flushed = await call(c, "flush", {"connection_id": cid, "target": "input"})
    assert flushed["bytes_discarded"] >= 0
    closed = await call(c, "close", {"connection_id": cid})
    assert closed["tx_bytes"] == 6
    assert (await error(c, "get_status", {"connection_id": cid}))["code"] == "connection_not_found"


async def test_errors_are_clear_and_change_nothing(client: tuple[Client, FakeOpener]) -> None:
    c, opener = client
    err = await error(c, "open", {"port": "fake0", "baudrate": 9600})
    assert err["code"] == "invalid_argument" and "baud_rate" in err["message"]
    assert (await call(c, "list_connections", {}))["connections"] == []
    assert (await error(c, "open", {"port": "ttyNOPE"}))["code"] == "port_not_found"
    assert (await error(c, "open", {"port": "fake0", "baud_rate": 0}))["code"] == "invalid_argument"
    cid = (await call(c, "open", {"port": "fake0"}))["connection_id"]
    assert (await error(c, "open", {"port": "fake0"}))["code"] == "port_busy"
    # transact validates its read half before sending anything
    err = await error(
        c, "transact", {"connection_id": cid, "data": "AT\r", "match": {"pattern": "(", "mode": "regex"}}
    )
    assert err["code"] == "invalid_argument"
    assert bytes(opener.devices["fake0"].written) == b""
    assert (await error(c, "write", {"connection_id": cid, "data": "zz", "encoding": "hex"}))["code"] == (
        "invalid_argument"
    )
    assert (await error(c, "read", {"connection_id": cid, "from": "yesterday"}))["code"] == "invalid_argument"
    assert (await error(c, "read", {"connection_id": "c99"}))["code"] == "connection_not_found"


async def test_disconnected_device(client: tuple[Client, FakeOpener]) -> None:
    c, opener = client
    cid = (await call(c, "open", {"port": "fake0"}))["connection_id"]
    opener.devices["fake0"].unplug()
    r = await call(c, "read", {"connection_id": cid, "timeout_ms": 600_000, "match": "x"})
    assert r["stop_reason"] == "disconnected"
    status = await call(c, "get_status", {"connection_id": cid})
    assert status["state"] == "disconnected" and status["last_error"]
    assert (await error(c, "write", {"connection_id": cid, "data": "AT\r"}))["code"] == "not_connected"


@pytest.mark.slow
async def test_cancelled_read_stops_and_consumes_nothing(client: tuple[Client, FakeOpener]) -> None:
    import anyio

    c, opener = client
    cid = (await call(c, "open", {"port": "fake0"}))["connection_id"]
    with anyio.move_on_after(0.3) as scope:
        await c.call_tool("read", {"connection_id": cid, "match": "never", "timeout_ms": 600_000})
    assert scope.cancelled_caught
    opener.devices["fake0"].feed(b"after cancel\r\n")
    r = await call(c, "read", {"connection_id": cid, "match": "\r\n", "timeout_ms": 5000})
    assert r["data"] == "after cancel\r\n" and r["from_offset"] == 0
