"""Calling serial-mcp tools in tests: a success must be structured, a failure must carry an error code."""

from __future__ import annotations

from typing import Any

from mcp import Client


def _result_models() -> dict[str, Any]:
    from serial_mcp.engine.operations import OPERATIONS
    from serial_mcp.mcp.tools import result_type

    return {op.name: result_type(op.run) for op in OPERATIONS}


RESULT_MODELS = _result_models()


def full(name: str, lean: dict[str, Any]) -> dict[str, Any]:
    """A lean result (issue 26: fields at their default or null are left out) with every field
    back: the tool's result model read from it, dumped whole. Raises if the lean form is not a
    valid result of the tool."""
    model = RESULT_MODELS.get(name)
    if model is None:
        return lean
    dumped: dict[str, Any] = model.model_validate(lean).model_dump(mode="json")
    return dumped


async def call(c: Client, name: str, args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    """Call a tool that must succeed; return its structuredContent, every field filled in (see
    ``full``; ``lean_call`` returns it as sent)."""
    return full(name, await lean_call(c, name, args, **kw))


async def lean_call(c: Client, name: str, args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    """Call a tool that must succeed; return its structuredContent as the server sent it."""
    r = await c.call_tool(name, args, **kw)
    assert not r.is_error, r.content
    assert isinstance(r.structured_content, dict), r.structured_content
    return r.structured_content


async def error(c: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """Call a tool that must fail; return its ``{"code", "message"}``."""
    r = await c.call_tool(name, args)
    assert r.is_error, r.structured_content
    assert isinstance(r.structured_content, dict), r.structured_content
    err = r.structured_content["error"]
    assert isinstance(err, dict), err
    assert err["code"] and err["message"]
    return err
