"""A tool's result is validated once, as its model is built — not again by the SDK on every call."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from tests.tool_calls import call
from tests.xmodem_peer import xmodem_crc_sender

pytestmark = pytest.mark.anyio


def _server() -> Any:
    opener = FakeOpener()
    opener.add("/dev/ttyFAKE0")
    return build_server(ConnectionManager(opener))


async def test_every_tool_still_publishes_its_output_schema() -> None:
    server = _server()
    async with Client(server) as client:
        tools = (await client.list_tools()).tools
    assert tools and all(t.output_schema and t.output_schema.get("type") == "object" for t in tools)


async def test_the_sdk_does_not_validate_a_result_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_second_validation(self: FuncMetadata, model: Any) -> Any:
        raise AssertionError(f"the SDK validated a {model.__name__} result a second time")

    server = _server()  # its output schemas are made with the adapter: patched only afterwards
    monkeypatch.setattr(FuncMetadata, "_output_adapter", no_second_validation)
    async with Client(server) as client:  # the client still checks each result against its schema
        opened = await call(client, "open", {"port": "/dev/ttyFAKE0"})
        listed = await call(client, "list_connections", {})
        assert [c["connection_id"] for c in listed["connections"]] == [opened["connection_id"]]
        wrote = await call(client, "write", {"connection_id": opened["connection_id"], "data": "AT\r"})
        assert wrote["bytes_written"] == 3


# --- issue 26: every tool's real results validate against its published output schema --------------
GGA = b"$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47\r\n"
BAD_GGA = GGA.replace(b"*47", b"*48")


def _plan(cid: str) -> list[tuple[str, dict[str, Any]]]:
    """One call or more of every tool, the read window's optional fields among them (frames,
    frames_dropped, bad_frames, bytes_skipped, counts, cursor, match_index)."""
    c = {"connection_id": cid}
    return [
        ("list_ports", {}),
        ("list_connections", {}),
        ("identify", {"ports": ["/dev/ttyFAKE0", "/dev/absent"], "listen_ms": 100}),
        ("get_status", c),
        ("read", {**c, "from": 0, "max_bytes": 4, "timeout_ms": 2000}),
        ("read", {**c, "from": 0, "protocol": "nmea0183", "timeout_ms": 200}),
        ("read", {**c, "protocol": "nmea0183", "summary": True, "timeout_ms": 0}),
        ("read", {**c, "from": 0, "match": "GGA", "reply": "tail:3", "timeout_ms": 200}),
        ("read", {**c, "from": 0, "protocol": "nmea0183", "timeout_ms": 200, "verbose": True}),
        ("write", {**c, "data": "AT\r"}),
        ("transact", {**c, "data": "AT\r", "timeout_ms": 50}),
        ("transact", {**c, "steps": [{"send": "AT\r", "expect": "OK", "timeout_ms": 50}]}),
        ("flush", c),
        ("capture_boot", {**c, "timeout_ms": 50}),
        ("set_dtr_rts", {**c, "dtr": True}),
        ("send_break", {**c, "duration_ms": 1}),
        ("set_flow_control", {**c, "flow_control": "none"}),
        ("reconfigure", {**c, "baud_rate": 9600}),
        ("save_profile", {**c, "name": "p1"}),
        ("list_profiles", {}),
        ("configure", {"defaults": {"baud_rate": 19200}, "profile": "p1"}),
        ("rollback_profile", {"name": "p1", "to_revision": 1}),
        ("get_log", {**c, "limit": 3}),
        ("record", {**c, "action": "start", "path": "s.jsonl"}),
        ("record", {**c, "action": "stop"}),
        ("export_log", {**c, "path": "e.jsonl"}),
        ("list_captures", {}),
        ("clear_log", c),
        ("compute_checksum", {"data": "123456789", "algorithm": "crc16_modbus"}),
        ("detect_baud", {**c, "candidates": [9600], "window_ms": 50}),
        ("file_transfer", {**c, "direction": "receive"}),  # the device sends one block (xmodem_peer)
        ("lend", {**c, "action": "status"}),
        ("lend", {**c, "action": "release", "timeout_ms": 60_000}),
        ("lend", {**c, "action": "reclaim"}),
        ("reconnect", c),
        ("close", c),
        ("open_profile", {"name": "p1"}),
        ("delete_profile", {"name": "p1"}),
    ]


@pytest.mark.parametrize("published", ["built", "kept"])
async def test_every_tool_result_validates_against_its_output_schema(tmp_path: Any, published: str) -> None:
    """Every tool called for real, on a server that built its tools and on one that publishes the
    tools an earlier launch kept (the CLI server's path: each tool's argument model made on its
    first call, mcp/tool_cache.py), with the same results."""
    import jsonschema

    from serial_mcp.mcp.tool_cache import DeferredArguments, ToolCache
    from serial_mcp.store.captures import CaptureStore
    from serial_mcp.store.profiles import ProfileStore

    opener = FakeOpener()
    dev = opener.add("/dev/ttyFAKE0")
    cache = None
    if published == "kept":
        cache = ToolCache(tmp_path / "tools.json")
        build_server(ConnectionManager(FakeOpener()), port_lister=list, tool_cache=cache)  # keeps them
        cache = ToolCache(tmp_path / "tools.json")
    server = build_server(
        ConnectionManager(opener),
        captures=CaptureStore(tmp_path / "captures"),
        profiles=ProfileStore(tmp_path / "profiles.toml"),
        tool_cache=cache,
    )
    deferred = [t for t in server._tool_manager.list_tools() if isinstance(t.fn_metadata, DeferredArguments)]
    assert len(deferred) == (len(server._tool_manager.list_tools()) if published == "kept" else 0)
    checked: dict[str, int] = {}
    failed: dict[str, str] = {}
    async with Client(server) as client:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        opened = await client.call_tool("open", {"port": "/dev/ttyFAKE0"})
        jsonschema.validate(opened.structured_content, schemas["open"])
        checked["open"] = 1
        dev.feed(GGA + BAD_GGA + GGA)
        for name, args in _plan(opened.structured_content["connection_id"]):
            dev.responder = xmodem_crc_sender(b"hi") if name == "file_transfer" else None
            r = await client.call_tool(name, args)
            if r.is_error:
                failed[name] = str(r.content[0])
                continue
            jsonschema.validate(r.structured_content, schemas[name])  # raises on any mismatch
            checked[name] = checked.get(name, 0) + 1
    # tools whose fake-device call cannot succeed (no baud to find) may fail; all
    # the others must have been checked
    # (open_profile needs a port the profile matches by USB identity; its result is open's, checked)
    assert set(schemas) - set(checked) <= {"detect_baud", "reconnect", "open_profile"}, (
        failed
    )
    assert checked["read"] == 5


async def test_a_default_transacts_structured_content_is_at_most_twice_its_text() -> None:
    """issue 26: the lean result of a plain transact carries no more than twice what its text says."""
    import json

    opener = FakeOpener()
    opener.add("/dev/ttyFAKE0", responder=lambda data: ATI_REPLY if data == b"ATI\r" else None)
    async with Client(_server_with(opener)) as client:
        cid = (await client.call_tool("open", {"port": "/dev/ttyFAKE0"})).structured_content["connection_id"]
        for args in ({"data": "ATI\r", "match": "OK"}, {"data": "ATI\r", "idle_ms": 200}):
            r = await client.call_tool("transact", {"connection_id": cid, "timeout_ms": 2000, **args})
            text = r.content[0].text  # type: ignore[union-attr]
            size = len(json.dumps(r.structured_content, separators=(",", ":")))
            assert size <= 2 * len(text), (size, len(text), r.structured_content, text)


ATI_REPLY = b"ATI\r\r\nQuectel\r\nEC25\r\nRevision: EC25EFAR06A06M4G\r\n\r\nOK\r\n"  # a modem's ATI


def _server_with(opener: FakeOpener) -> Any:
    return build_server(ConnectionManager(opener))
