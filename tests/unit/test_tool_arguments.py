"""LeanArguments: the SDK's argument handling, same answers, with the per-call work done once."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from pydantic import ValidationError

from serial_mcp.mcp.server import build_server
from serial_mcp.mcp.tool_arguments import LeanArguments
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager

_TOOLS = build_server(ConnectionManager(FakeOpener()))._tool_manager.list_tools()


def _sdk_twin(lean: Any) -> FuncMetadata:
    return FuncMetadata(arg_model=lean.arg_model, output_schema=lean.output_schema)


def _outcome(meta: FuncMetadata, args: dict[str, Any]) -> Any:
    try:
        return ("ok", meta.validate_arguments(args))
    except ValidationError as exc:
        return ("invalid", exc.errors(include_url=False))


def test_every_tool_has_lean_arguments_and_no_output_model() -> None:
    assert _TOOLS
    for tool in _TOOLS:
        assert isinstance(tool.fn_metadata, LeanArguments), tool.name
        assert tool.fn_metadata.output_model is None and tool.fn_metadata.output_schema is not None


def test_a_plain_transact_parses_no_json(monkeypatch: pytest.MonkeyPatch) -> None:
    """``"AT\\r"``, ``"OK"``, ``"c1"``: none can become a list, object or null, so none is decoded."""
    calls: list[str] = []
    real = json.loads

    def counting(text: Any, *a: Any, **k: Any) -> Any:
        calls.append(text)
        return real(text, *a, **k)

    meta = next(t for t in _TOOLS if t.name == "transact").fn_metadata
    monkeypatch.setattr(json, "loads", counting)
    args = meta.validate_arguments({"connection_id": "c1", "data": "AT\r", "match": "OK", "timeout_ms": 2000})
    assert calls == []
    assert args["data"] == "AT\r" and args["connection_id"] == "c1" and args["timeout_ms"] == 2000


def test_json_inside_a_string_is_still_unpacked_as_the_sdk_does() -> None:
    """Clients that send ``'["a","b"]'`` for a list argument keep working; ``"true"`` stays a string
    for the validator to judge, as before."""
    meta = next(t for t in _TOOLS if t.name == "transact").fn_metadata
    args = meta.validate_arguments({"connection_id": "c1", "keys": ' ["ctrl-c", "enter"]'})
    assert args["keys"] == ["ctrl-c", "enter"]
    assert _outcome(meta, {"connection_id": "c1", "read_echo": "null"})[0] == "invalid"
    assert _outcome(meta, {"connection_id": "c1", "read_echo": "true"}) == _outcome(
        _sdk_twin(meta), {"connection_id": "c1", "read_echo": "true"}
    )


def test_keyword_alias_comes_out_under_its_wire_name() -> None:
    """``read``'s ``from`` (a Python keyword, declared ``from_``) reaches the tool as ``from``."""
    meta = next(t for t in _TOOLS if t.name == "read").fn_metadata
    args = meta.validate_arguments({"connection_id": "c1", "from": 7})
    assert args["from"] == 7 and "from_" not in args
    assert args == _sdk_twin(meta).validate_arguments({"connection_id": "c1", "from": 7})


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.sampled_from(
        ["[1,2]", '{"a":1}', "null", " null", "\tnull", "[", "{", "true", "1e3", '"x"', "nul", "[1,", "NaN"]
    ),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(
    tool=st.sampled_from(_TOOLS),
    picks=st.lists(st.tuples(st.integers(0, 40), _VALUES), max_size=6),
    extra=st.dictionaries(st.text(max_size=6), _VALUES, max_size=2),
)
@pytest.mark.slow
def test_same_answer_as_the_sdk_for_any_arguments(
    tool: Any, picks: list[tuple[int, Any]], extra: dict[str, Any]
) -> None:
    meta = tool.fn_metadata
    names = [f.alias or n for n, f in meta.arg_model.model_fields.items()]
    args: dict[str, Any] = dict(extra)
    for i, value in picks:
        if names:
            args[names[i % len(names)]] = value
    assert _outcome(meta, args) == _outcome(_sdk_twin(meta), args)
