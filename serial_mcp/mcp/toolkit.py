"""How tools are registered: structured errors, Python-keyword argument names, typo detection.

- A ``SerialMcpError`` raised by a tool becomes ``isError: true`` with ``{"error": {"code",
  "message"}}`` in ``structuredContent`` and the message as text — never a hidden traceback.
- Arguments whose wire name is a Python keyword (``from``) are declared as ``from_`` with an alias.
- ``UnknownArgumentGuard`` rejects argument names a tool does not have, naming the closest one
  (``baudrate`` → ``baud_rate``), before the SDK's validation would silently drop them.
"""

from __future__ import annotations

import asyncio
import difflib
import functools
import inspect
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.runner import CallNext

from serial_mcp import messages
from serial_mcp.errors import ErrorCode, SerialMcpError, capped
from serial_mcp.mcp import callers, sdk_private, tool_cache
from serial_mcp.mcp.sdk_private import HandlerResult

log = logging.getLogger(__name__)


def error_result(code: str, message: str) -> types.CallToolResult:
    """The one shape of a tool failure (the message capped: pydantic's report of a 10,000-item list
    would otherwise be half a megabyte)."""
    message = capped(message)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"{message} [{code}]")],
        structured_content={"error": {"code": code, "message": message}},
        is_error=True,
    )


def structured_result(result: Any, verbose: bool = False) -> Any:
    """A model result as structuredContent (lean unless ``verbose``) plus its one-line summary as
    the text block (serial_mcp.answers: the front doors' one result layer)."""
    from serial_mcp import answers  # loaded with the engine that made the result

    line = answers.text(result)
    if line is None:
        return result
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=line)],
        structured_content=answers.structured(result, verbose),
    )


HEAVY_ITEMS = 1000  # frames (or steps) in a result that is shaped on a worker thread
HEAVY_CHARS = 1 << 20  # characters of data in one


def _heavy(result: Any) -> bool:
    """Is the result big enough that making its text and JSON would hold the event loop? (Its
    ``__dict__`` is asked, not ``getattr``: a pydantic model without the field answers that through
    ``__getattr__`` and a caught AttributeError, twice per call.)"""
    fields = getattr(result, "__dict__", None) or {}
    frames = fields.get("frames")
    data = fields.get("data")
    return (isinstance(frames, list) and len(frames) > HEAVY_ITEMS) or (
        isinstance(data, str) and len(data) > HEAVY_CHARS
    )


# What a first full build in this process made of each tool, after slimming: its published input
# schema and its argument metadata (model, output schema), by tool name and signature. Neither
# depends on the server (only the function the tool calls does), and building them is ~0.2 s of
# pydantic work per server: a process that builds a second server (a test suite, an embedding
# host) gets the same tools in ~20 ms. A signature that differs in anything (a type, a default, a
# description) is another key, so is built afresh.
_BUILT: dict[tuple[str, str], tuple[dict[str, Any], Any, str | None]] = {}


class ToolRegistry:
    """Registers tool functions on an MCPServer and remembers each tool's argument names."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self.arg_names: dict[str, set[str]] = {}
        self.mutating: set[str] = set()  # write to a device, drive its lines or change stored settings
        self.on_listed: Callable[[], None] | None = None  # told when a tools/list has been answered
        self.reused: set[str] = set()  # tools whose schemas and metadata came from _BUILT
        self._keys: dict[str, tuple[str, str]] = {}

    def tool(
        self,
        *,
        title: str,
        description: str,
        read_only: bool = False,
        destructive: bool = False,
        idempotent: bool = False,
        mutates: bool = False,
    ) -> Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]:
        """``mutates``: the tool writes to a device, drives its lines or changes stored settings."""

        def register(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
            sig = inspect.signature(fn, eval_str=True)
            if mutates:
                self.mutating.add(fn.__name__)
            call = _answering(fn)
            call.__signature__ = sig  # type: ignore[attr-defined]
            names = {p.name for p in sig.parameters.values() if p.annotation is not _context_type()}
            self.arg_names[fn.__name__] = {
                next((w for w, p in tool_cache.KEYWORD_ALIASES.items() if p == n), n) for n in names
            }
            # Only what differs from the spec's defaults (readOnly false, idempotent false, openWorld
            # true); destructive (default true) is stated for every tool that can change anything.
            annotations = types.ToolAnnotations(
                read_only_hint=True if read_only else None,
                destructive_hint=None if read_only else destructive,
                idempotent_hint=True if idempotent else None,
            )
            key = self._keys[fn.__name__] = (fn.__name__, str(sig))
            built = _BUILT.get(key)
            if built is not None:  # built by an earlier server of this process: the same tool
                parameters, metadata, context_kwarg = built
                tool = tool_cache.built_tool(
                    call, fn.__name__, title, description, annotations, parameters, metadata, context_kwarg
                )
                sdk_private.add_built_tool(self.server, tool)
                self.reused.add(fn.__name__)
                return fn
            self.server.tool(name=fn.__name__, title=title, description=description, annotations=annotations)(
                call
            )
            # Per-call argument work precomputed, and no second validation of the result's dump.
            from serial_mcp.mcp import tool_arguments  # a warm launch builds no tool: not loaded

            tool_arguments.make_lean(sdk_private.tool_of(self.server, fn.__name__))
            return fn

        return register

    def remember_built(self) -> None:
        """Keep this server's freshly built tools (slimmed by now) for the next server (_BUILT)."""
        for tool in sdk_private.tools_of(self.server):
            key = self._keys.get(tool.name)
            if key is not None and tool.name not in self.reused:
                _BUILT[key] = (tool.parameters, tool.fn_metadata, tool.context_kwarg)

    def kept(self, name: str, entry: dict[str, Any], load: tool_cache.ToolLoader) -> None:
        """Register a tool kept by an earlier launch (tool_cache): published as it was then; ``load``
        gives its real function, on the first call (mcp/engine_loader.py)."""

        async def tool(**kwargs: Any) -> Any:
            return await load()(**kwargs)  # loaded by then: the first call's arguments needed it

        tool.__name__ = tool.__qualname__ = name
        self.arg_names[name] = set(entry["arg_names"])
        if entry["mutates"]:
            self.mutating.add(name)
        annotations = types.ToolAnnotations(**entry["annotations"]) if entry["annotations"] else None
        built = tool_cache.kept_tool(_answering(tool), name, entry, annotations, load)
        sdk_private.add_built_tool(self.server, built)

    def guard(self) -> UnknownArgumentGuard:
        return UnknownArgumentGuard(self.arg_names, self)


def _answering(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """``fn`` as the SDK calls it: keyword aliases mapped, the caller's scope held, every failure
    answered in the one shape of a tool error, a big result shaped beside the loop."""

    @functools.wraps(fn)
    async def call(**kwargs: Any) -> Any:
        for wire, py in tool_cache.KEYWORD_ALIASES.items():
            if wire in kwargs:
                kwargs[py] = kwargs.pop(wire)
        caller = callers.current()
        result: Any = None
        try:
            with caller.call(callers.current_request()) as scope:
                result = await fn(**kwargs)
            if scope.cancelled_caught:  # the client went away while this call ran
                return error_result(ErrorCode.CANCELLED, messages.CALL_CANCELLED)
        except SerialMcpError as exc:
            return error_result(exc.code, exc.message)
        except OSError as exc:  # the device or OS refused: say so, keep serving
            log.info("tool %s: OS error: %s", fn.__name__, exc)
            return error_result(ErrorCode.IO_ERROR, messages.IO_ERROR.format(error=exc))
        except Exception as exc:  # a bug: logged with its traceback, reported without one
            log.exception("tool %s failed", fn.__name__)
            return error_result(ErrorCode.INTERNAL_ERROR, messages.INTERNAL_ERROR.format(error=exc))
        verbose = kwargs.get("verbose") is True  # issue 26: every field, on request
        if _heavy(result):  # a 4 MiB framed read: its text and dump are made beside the loop
            return await asyncio.to_thread(structured_result, result, verbose)
        return structured_result(result, verbose)

    return call


def _context_type() -> Any:
    from mcp.server.mcpserver import Context

    return Context


class UnknownArgumentGuard:
    """Server middleware: a ``tools/call`` with an argument the tool lacks gets a tool error."""

    def __init__(self, arg_names: dict[str, set[str]], registry: ToolRegistry | None = None) -> None:
        self.arg_names = arg_names
        self.registry = registry

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        callers.bind(callers.caller_for(ctx), ctx.request_id)  # who calls: owner, default cursor, cancel
        if ctx.method == "tools/call" and ctx.params:
            name = ctx.params.get("name")
            args = ctx.params.get("arguments") or {}
            allowed = self.arg_names.get(name) if isinstance(name, str) else None
            if allowed is not None and isinstance(args, dict):
                unknown = sorted(k for k in args if k not in allowed)
                if unknown:
                    key = unknown[0]
                    close = difflib.get_close_matches(key, sorted(allowed), n=1, cutoff=0.5)
                    hint = messages.DID_YOU_MEAN.format(name=close[0]) if close else ""
                    msg = messages.UNKNOWN_ARGUMENT.format(
                        key=key, tool=name, hint=hint, allowed=", ".join(sorted(allowed))
                    )
                    return error_result(ErrorCode.INVALID_ARGUMENT, msg)
            return _structure_sdk_error(await call_next(ctx))
        result = await call_next(ctx)
        if ctx.method == "tools/list" and self.registry is not None and self.registry.on_listed is not None:
            self.registry.on_listed()
        return result


_PYDANTIC_ITEM = re.compile(
    r"^(\S[^\n]*)\n\s+(.+?)(?: \[type=[^,\]]+(?:, input_value=(.*?))?(?:, input_type=\w+)?\])?$", re.M
)


def _clean_validation_text(text: str) -> str:
    """pydantic's multi-line report → ``field: what is wrong (got X)`` per field, one line."""
    items = [
        f"{field}: {problem}" + (f" (got {got})" if got else "")
        for field, problem, got in _PYDANTIC_ITEM.findall(text)
        if not field.startswith(("Error executing", "For further"))
    ]
    return "; ".join(items) if items else text.strip()


def _sdk_error(text: str) -> types.CallToolResult:
    if text.startswith("Unknown tool"):
        return error_result(ErrorCode.UNKNOWN_TOOL, messages.UNKNOWN_TOOL.format(detail=text))
    return error_result(
        ErrorCode.INVALID_ARGUMENT, messages.ARGUMENT_REJECTED.format(detail=_clean_validation_text(text))
    )


def _structure_sdk_error(result: HandlerResult) -> HandlerResult:
    """The SDK refuses unknown tools and ill-typed arguments with a bare text error; give it our shape."""
    if isinstance(result, types.CallToolResult):
        if result.is_error and result.structured_content is None:
            return _sdk_error(" ".join(c.text for c in result.content if isinstance(c, types.TextContent)))
        return result
    if isinstance(result, dict) and result.get("isError") and result.get("structuredContent") is None:
        text = " ".join(str(c.get("text", "")) for c in result.get("content", []) if isinstance(c, dict))
        return _sdk_error(text).model_dump(mode="json", by_alias=True, exclude_none=True)
    return result
