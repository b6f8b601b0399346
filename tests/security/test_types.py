"""A JSON boolean where a number is expected is ``invalid_argument`` everywhere — never 1 or 0.

``open(baud_rate=true)`` used to open at 1 baud, ``send_break(duration_ms=true)`` sent a 1 ms break.
Every integer parameter every tool declares (found in ``tools/list``, so a new one is covered too)
gets ``true`` and must be refused with nothing changed; the Python API refuses them as well.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from serial_mcp.api import Engine
from serial_mcp.errors import SerialMcpError
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeDevice, FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.store.profiles import ProfileStore
from tests.tool_calls import call, error

pytestmark = pytest.mark.anyio

# A valid value for each required non-integer argument, so only the boolean is wrong.
FILLERS: dict[str, Any] = {
    "port": "board",
    "data": "AT",
    "name": "bench",
    "defaults": {"baud_rate": 9600},
    "direction": "send",
    "flow_control": "none",
    "algorithm": "crc16_modbus",
    "path": "a.jsonl",
}
NUMBER_FILLERS = {"to_revision": 1}

REPORTED_PARAMETERS = (
    "open.baud_rate",
    "send_break.duration_ms",
    "read.timeout_ms",
    "read.max_bytes",
    "open.stop_bits",
    "write.timeout_ms",
    "detect_baud.candidates",
    "read.screen",
)


def takes_integer(schema: dict[str, Any]) -> str | None:
    """How a property takes numbers: "value", "items" (an array of them), "values" (an object's)."""
    options = schema.get("anyOf", [schema])
    for option in options:
        if option.get("type") in ("integer", "number"):
            return "value"
        if option.get("type") == "array" and option.get("items", {}).get("type") == "integer":
            return "items"
        if (
            option.get("type") == "object"
            and (option.get("additionalProperties") or {}).get("type") == "integer"
        ):
            return "values"
    return None


def boolean_for(shape: str) -> Any:
    return {"value": True, "items": [True], "values": {"cols": True, "rows": True, "chunk_bytes": True}}[
        shape
    ]


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[tuple[Client, FakeDevice, str]]:
    opener = FakeOpener()
    dev = opener.add("board", lambda data: b"OK\r\n")
    opener.add("other")
    profiles = ProfileStore(tmp_path / "profiles.toml")
    profiles.load()
    async with Client(build_server(ConnectionManager(opener), profiles=profiles)) as c:
        cid = (await call(c, "open", {"port": "other"}))["connection_id"]
        yield c, dev, cid


@pytest.mark.slow
async def test_every_integer_parameter_refuses_a_boolean(env: tuple[Client, FakeDevice, str]) -> None:
    c, dev, cid = env
    before = await call(c, "get_status", {"connection_id": cid})
    tools = (await c.list_tools()).tools
    checked: list[str] = []
    for tool in tools:
        props: dict[str, Any] = tool.input_schema.get("properties", {})
        required = set(tool.input_schema.get("required", []))
        for name, schema in props.items():
            shape = takes_integer(schema)
            if shape is None:
                continue
            args: dict[str, Any] = {"connection_id": cid} if "connection_id" in props else {}
            if tool.name == "open":
                args = {}
            for other in required - {name, "connection_id"}:
                args[other] = NUMBER_FILLERS.get(other, FILLERS.get(other, "x"))
            args[name] = boolean_for(shape)
            err = await error(c, tool.name, args)
            assert err["code"] == "invalid_argument", (tool.name, name, err)
            checked.append(f"{tool.name}.{name}")
    assert set(REPORTED_PARAMETERS) <= set(checked)  # the ones the issue found taking true as 1
    assert len(checked) >= 30, checked
    # nothing changed: no port opened, nothing sent, the open connection untouched
    assert (await call(c, "list_connections", {}))["connections"][0]["connection_id"] == cid
    assert len((await call(c, "list_connections", {}))["connections"]) == 1
    assert dev.opens == 0 and not dev.written
    after = await call(c, "get_status", {"connection_id": cid})
    assert after["settings"] == before["settings"] and after["tx_bytes"] == 0


@pytest.mark.parametrize(
    ("where", "options"),
    [
        ("open", {"baud_rate": True}),
        ("open", {"stop_bits": True}),
        ("open", {"data_bits": True}),
        ("open", {"rx_buffer_size": True}),
        ("read", {"timeout_ms": True}),
        ("read", {"max_bytes": True}),
        ("read", {"idle_ms": True}),
        ("read", {"max_frames": True}),
        ("write", {"timeout_ms": True}),
        ("break", {"duration_ms": True}),
    ],
)
async def test_the_python_api_refuses_booleans_too(where: str, options: dict[str, Any]) -> None:
    opener = FakeOpener()
    dev = opener.add("board")
    async with Engine(opener=opener) as engine:
        with pytest.raises(SerialMcpError) as exc:
            if where == "open":
                await engine.open("board", **options)
            else:
                conn = await engine.open("board")
                if where == "read":
                    await conn.read(**options)
                elif where == "write":
                    await conn.write("x", **options)
                else:
                    await conn.send_break(**options)
        assert exc.value.code == "invalid_argument"
    assert not dev.written


@pytest.mark.slow
async def test_a_port_with_a_nul_byte_is_invalid_argument(env: tuple[Client, FakeDevice, str]) -> None:
    c, _, _ = env
    err = await error(c, "open", {"port": "/dev/tty\x00USB0"})
    assert err["code"] == "invalid_argument" and "control characters" in err["message"]


HUGE = "x" * 1_000_000


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("open", {"port": HUGE}),
        ("open", {"port": "/dev/" + HUGE}),
        ("get_status", {"connection_id": HUGE}),
        ("read", {"cursor": HUGE}),
        ("read", {"protocol": HUGE}),
        ("read", {"encoding": HUGE}),
        ("write", {"data": "x", "protocol": HUGE}),
        ("open_profile", {"name": HUGE}),
        ("compute_checksum", {"data": "x", "algorithm": HUGE}),
        ("read", {"from": HUGE}),
    ],
)
@pytest.mark.slow
async def test_an_error_never_echoes_a_huge_value(
    env: tuple[Client, FakeDevice, str], tool: str, args: dict[str, Any]
) -> None:
    c, _, cid = env
    if tool in ("read", "write"):
        args = {"connection_id": cid, **args}
    r = await c.call_tool(tool, args)
    assert r.is_error
    size = len(r.model_dump_json())
    assert size < 8_000, (tool, size)  # was 2-6 MB: the whole value, twice
    assert r.structured_content is not None
    message = r.structured_content["error"]["message"]
    assert "x" * 200 not in message, message  # a short prefix (and the length), never the value
    if "got '" not in message:  # pydantic's own report cuts the value (without a length)
        assert "characters)" in message, message
