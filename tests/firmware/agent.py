"""An agent's view of serial-mcp for the firmware tests: each tool call counted, with the bytes it returned."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mcp import Client


@dataclass
class Agent:
    """Calls tools like an agent and keeps the tally: how many calls, how many result bytes (the one-line text
    plus the JSON of structuredContent, what a client hands the model)."""

    client: Client
    calls: int = 0
    result_bytes: int = 0
    log: list[str] = field(default_factory=list)

    async def raw(self, name: str, args: dict[str, Any]) -> tuple[bool, dict[str, Any] | None, str]:
        r = await self.client.call_tool(name, args)
        text = "".join(getattr(c, "text", "") for c in r.content)
        structured = r.structured_content
        size = len(text.encode()) + (len(json.dumps(structured).encode()) if structured is not None else 0)
        self.calls += 1
        self.result_bytes += size
        self.log.append(f"{name}({json.dumps(args)[:120]}) -> {size} B: {text[:160]}")
        return bool(r.is_error), structured, text

    async def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """A call that must succeed: its structuredContent."""
        failed, structured, text = await self.raw(name, args)
        assert not failed, text
        assert structured is not None
        return structured

    async def error(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """A call that must fail: its ``{"code", "message"}``."""
        failed, structured, text = await self.raw(name, args)
        assert failed, text
        assert structured is not None
        err: dict[str, Any] = structured["error"]
        return err

    def tally(self) -> str:
        return f"{self.calls} tool calls, {self.result_bytes} result bytes"
