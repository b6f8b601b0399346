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
