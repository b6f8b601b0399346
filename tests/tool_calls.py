"""Calling serial-mcp tools in tests: a success must be structured, a failure must carry an error code."""

from __future__ import annotations

from typing import Any

from mcp import Client


async def call(c: Client, name: str, args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    """Call a tool that must succeed; return its structuredContent."""
    r = await c.call_tool(name, args, **kw)
    assert not r.is_error, r.content
    assert r.structured_content is not None
    return r.structured_content


async def error(c: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """Call a tool that must fail; return its ``{"code", "message"}``."""
    r = await c.call_tool(name, args)
    assert r.is_error, r.structured_content
    assert r.structured_content is not None
    err: dict[str, Any] = r.structured_content["error"]
    assert err["code"] and err["message"]
    return err
