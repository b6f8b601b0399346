"""Every MCP tool, made from the engine's operation table: one tool per operation, its arguments
the operation's options.

A tool's signature (and so its input schema) is built from the options class: ``connection_id``
first for an operation on a connection (optional where the options take a ``port`` instead, issue
39), then every option with its type, default and the one description ``engine/options.py`` gives
it (left out where the options say it is described on another tool, as ``transact``'s read window
is on ``read``). The call builds the options object and runs the operation through
``operations.invoke``, exactly as the Python API does.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import sys
import typing
from collections.abc import Awaitable, Callable
from contextvars import Token
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context
from pydantic import Field, ValidationError, WithJsonSchema
from pydantic.dataclasses import rebuild_dataclass
from pydantic.fields import FieldInfo

from serial_mcp.core.unknown_keys import Keyed
from serial_mcp.engine.operations import OPERATIONS, Operation, invoke
from serial_mcp.engine.option_types import Verbose
from serial_mcp.engine.options import OnPort, ReadWindow, invalid, wire_name
from serial_mcp.engine.services import Progress, Services, progress_reporter
from serial_mcp.mcp.callers import current
from serial_mcp.mcp.toolkit import ToolRegistry

CONNECTION_ID = "connection_id"
CONTEXT = "ctx"
VERBOSE = "verbose"  # issue 26: every field of a read's answer, nulls and defaults too
REPORTS_PROGRESS = frozenset({"send_break", "file_transfer"})  # MCP progress notifications
GNSS_PARSERS = "serial_mcp.core.parsers.gnss"
GNSS_NAMES = frozenset({"gnss", "ubx", "rtcm3"})  # the parser types and the preset that load it
GNSS_KEYS = ("protocol", "rx_parser", "steps")  # the arguments that can name one


def register(reg: ToolRegistry, svc: Services) -> None:
    """Register a tool for every operation of the table."""
    functions = tool_functions(svc)
    for op in OPERATIONS:  # its hints are the tool's annotations (read_only, destructive, …)
        hints = dataclasses.asdict(op.hints)
        reg.tool(title=op.title, description=op.description, **hints)(functions[op.name])


def tool_functions(svc: Services) -> dict[str, Callable[..., Awaitable[Any]]]:
    """The tool function of every operation, by tool name (a server publishing kept tools makes
    them on the first call: mcp/engine_loader.py)."""
    return {op.name: tool_function(op, svc) for op in OPERATIONS}


def tool_function(op: Operation[Any, Any, Any], svc: Services) -> Callable[..., Awaitable[Any]]:
    """The tool of ``op``: arguments in, the operation's typed result out."""
    model = op.options_type
    progress = op.name in REPORTS_PROGRESS

    async def tool(**kwargs: Any) -> Any:
        target = kwargs.pop(CONNECTION_ID, None) if op.on_connection else None
        kwargs.pop(VERBOSE, None)  # the answer's (toolkit.structured_result), not the engine's
        ctx: Context | None = kwargs.pop(CONTEXT, None)
        await first_use(model, kwargs)
        try:
            opts = model(**kwargs)  # the SDK checked the types; this builds the engine's object
        except ValidationError as exc:
            raise invalid(exc) from None
        token: Token[Progress] | None = None
        if ctx is not None:
            token = progress_reporter.set(_reporter(ctx))
        try:
            return await invoke(op, svc, current(), target, opts)
        finally:
            if token is not None:
                progress_reporter.reset(token)

    tool.__name__ = op.name
    tool.__qualname__ = op.name
    tool.__doc__ = op.description
    sig = signature(op, progress)
    tool.__signature__ = sig  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in sig.parameters.values()}  # how the SDK finds ctx
    tool.__annotations__["return"] = sig.return_annotation
    return tool


async def first_use(model: Any, kwargs: dict[str, Any]) -> None:
    """What start-up left for first use (issue 27), done on a worker thread so the loop stays live:
    the options class's validator (``defer_build``), and the GNSS decoders (pyubx2, pyrtcm) for the
    first call that names a GNSS parser or preset. Each happens once; afterwards this is two checks."""
    if not getattr(model, "__pydantic_complete__", True):
        await anyio.to_thread.run_sync(rebuild_dataclass, model)
    if GNSS_PARSERS not in sys.modules and any(_names_gnss(kwargs.get(key)) for key in GNSS_KEYS):
        await anyio.to_thread.run_sync(importlib.import_module, GNSS_PARSERS)


def _names_gnss(value: Any, depth: int = 4) -> bool:
    if isinstance(value, str):
        return value in GNSS_NAMES
    if depth and isinstance(value, dict):
        return any(_names_gnss(v, depth - 1) for v in value.values())
    if depth and isinstance(value, list):
        return any(_names_gnss(v, depth - 1) for v in value[:16])
    return False


def _reporter(ctx: Context) -> Progress:
    async def report(done: float, total: float | None, message: str) -> None:
        await ctx.report_progress(done, total, message)

    return report


def signature(op: Operation[Any, Any, Any], progress: bool = False) -> inspect.Signature:
    """``(connection_id, [ctx], <every option>)``, all keyword arguments, as the SDK reads them."""
    model = op.options_type
    hints = typing.get_type_hints(model, include_extras=True)
    hidden: frozenset[str] = model.described_elsewhere
    kw = inspect.Parameter.KEYWORD_ONLY
    params = []
    if op.on_connection and issubclass(model, OnPort):  # or port (issue 39): the operation asks for one
        params.append(inspect.Parameter(CONNECTION_ID, kw, annotation=str | None, default=None))
    elif op.on_connection:
        params.append(inspect.Parameter(CONNECTION_ID, kw, annotation=str))
    if progress:
        params.append(inspect.Parameter(CONTEXT, kw, annotation=Context))
    for field in dataclasses.fields(model):
        annotation = _published(hints[field.name], field.name, described=field.name not in hidden)
        default = inspect.Parameter.empty if field.default is dataclasses.MISSING else field.default
        params.append(inspect.Parameter(field.name, kw, annotation=annotation, default=default))
    if issubclass(model, ReadWindow):  # how much of the answer to show (serial_mcp/answers.py)
        verbose = _published(Verbose, VERBOSE, described=VERBOSE not in hidden)
        params.append(inspect.Parameter(VERBOSE, kw, annotation=verbose, default=False))
    return inspect.Signature(params, return_annotation=result_type(op.run))


def result_type(run: Callable[..., Any]) -> Any:
    """The result model an operation returns (its output schema); only the return annotation is
    resolved, as the operation's module sees it."""
    annotation = inspect.get_annotations(run)["return"]
    return eval(annotation, run.__globals__) if isinstance(annotation, str) else annotation


def _published(hint: Any, name: str, *, described: bool) -> Any:
    """An option's type as the tool publishes it: its description kept or dropped, and the wire
    name of an option spelt after a Python keyword (``from_`` arrives as ``from``)."""
    alias = wire_name(name)
    if typing.get_origin(hint) is not Annotated:
        return hint if alias == name else Annotated[hint, Field(alias=alias)]
    base, *metadata = typing.get_args(hint)
    out: list[Any] = []
    for meta in metadata:
        if isinstance(meta, Keyed):  # a nested option: the tool takes an object, the options model checks it
            base = meta.wire
            continue
        if isinstance(meta, WithJsonSchema):  # a typed read option: published as its schema, taken as
            base = Any  # it comes; the options model checks it and says a fault in the contract's words
        if isinstance(meta, FieldInfo):
            meta = Field(
                description=meta.description if described else None,
                alias=alias if alias != name else None,
            )
        out.append(meta)
    return Annotated[tuple([base, *out])]
