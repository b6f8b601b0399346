"""Output and input schemas carry no ``$ref`` to a definition used only once (inlined in place)."""

from __future__ import annotations

import asyncio
import json

from jsonschema import validators

from serial_mcp.mcp.schema import inline_single_refs
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.manager import ConnectionManager


def test_a_definition_used_once_is_written_in_place() -> None:
    schema = {
        "$defs": {"W": {"type": "object", "properties": {"n": {"type": "integer"}}}},
        "properties": {"write": {"$ref": "#/$defs/W", "description": "what was sent"}},
        "type": "object",
    }
    assert inline_single_refs(schema) == {
        "properties": {
            "write": {
                "type": "object",
                "properties": {"n": {"type": "integer"}},
                "description": "what was sent",
            }
        },
        "type": "object",
    }


def test_shared_recursive_and_chained_definitions() -> None:
    schema = {
        "$defs": {
            "Shared": {"type": "string"},
            "Tree": {"type": "object", "properties": {"kids": {"items": {"$ref": "#/$defs/Tree"}}}},
            "Outer": {"type": "object", "properties": {"inner": {"$ref": "#/$defs/Inner"}}},
            "Inner": {"type": "integer"},
        },
        "properties": {
            "a": {"$ref": "#/$defs/Shared"},
            "b": {"$ref": "#/$defs/Shared"},
            "t": {"$ref": "#/$defs/Tree"},
            "o": {"$ref": "#/$defs/Outer"},
        },
    }
    out = inline_single_refs(schema)
    assert set(out["$defs"]) == {"Shared", "Tree"}  # used twice; refers to itself
    assert out["properties"]["o"] == {"type": "object", "properties": {"inner": {"type": "integer"}}}
    assert out["properties"]["a"] == {"$ref": "#/$defs/Shared"}
    good = {"a": "x", "b": "y", "t": {"kids": [{"kids": []}]}, "o": {"inner": 3}}
    for s in (schema, out):  # the same instances pass and fail before and after
        v = validators.validator_for(s)(s)
        assert not list(v.iter_errors(good))
        assert list(v.iter_errors({**good, "o": {"inner": "three"}}))


def test_no_tool_schema_refers_to_a_definition_used_once() -> None:
    server = build_server(ConnectionManager(None))  # type: ignore[arg-type]
    tools = asyncio.run(server.list_tools())
    for tool in tools:
        for schema in (tool.input_schema, tool.output_schema or {}):
            text = json.dumps(schema)
            for name in schema.get("$defs", {}):
                assert text.count(f'"#/$defs/{name}"') != 1, (tool.name, name)
    listed = next(t for t in tools if t.name == "list_connections").output_schema
    assert listed is not None and "$defs" not in listed and "$ref" not in json.dumps(listed)

