"""Calling serial-mcp tools in tests: a success must be structured, a failure must carry an error code."""

from __future__ import annotations

from typing import Any

from mcp import Client


async def call(c: Client, name: str, args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    """Call a tool that must succeed; return its structuredContent."""
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
