"""The tools' published schemas kept between launches, so ``tools/list`` needs no pydantic build.

At start-up the SDK builds, for each of the ~30 tools, an argument model from the signature, its
JSON schema and the result model's JSON schema: ~0.15 s of the ~0.3 s serial-mcp adds to a bare SDK
server's launch (issue 27: ≤ 1.15× of it). None of that changes between two launches of the same
code, so ``serial-mcp`` keeps each tool as published (slimmed schemas, title, description,
annotations, argument names) in the user's cache directory, under a fingerprint of everything it is
made from: the Python, ``mcp``, ``pydantic`` and ``pydantic-core`` versions and the name, size and
modification time of every module of ``serial_mcp``. A launch whose fingerprint matches publishes
the kept tools without importing the engine at all (another ~0.2 s: its operations, options and
result models); each tool's first call loads the engine and builds that tool's argument model on a
worker thread (``DeferredArguments``: the same validation, with the same error text), and once the
first ``tools/list`` has been answered the engine is loaded in the background anyway
(mcp/engine_loader.py). Any other launch builds everything as before and rewrites the file. An
unreadable, corrupt (its digest does not match) or foreign file is a miss, never an error, and only
the stdio/HTTP server uses the cache (``build_server(tool_cache=...)``); tests and the Python API
build as before.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import func_metadata
from pydantic import ValidationError

from serial_mcp.mcp import sdk_private
from serial_mcp.mcp.tool_arguments import LeanArguments
from serial_mcp.store.kept_json import keep, load_kept

FORMAT: Final = 2
FILE_NAME: Final = "tool-schemas.json"
_PACKAGE_ROOT: Final = Path(__file__).resolve().parents[1]
_VERSIONS: Final = ("mcp", "pydantic", "pydantic-core")


def default_path() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("serial-mcp")) / FILE_NAME


def fingerprint() -> str:
    """What the published schemas are made from (see the module doc): ~1 ms of ``stat`` calls."""
    h = hashlib.sha256(f"{FORMAT}|{sys.version}".encode())
    for dist in _VERSIONS:
        try:
            h.update(f"|{dist}={importlib.metadata.version(dist)}".encode())
        except importlib.metadata.PackageNotFoundError:
            h.update(f"|{dist}=?".encode())
    for path in sorted(_PACKAGE_ROOT.rglob("*.py")):
        st = path.stat()
        h.update(f"|{path.relative_to(_PACKAGE_ROOT)}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()


class ToolCache:
    """The file of kept tools: ``load`` (None on any miss) and ``save`` after a full build."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_path()
        self.key = fingerprint()

    def load(self) -> dict[str, dict[str, Any]] | None:
        """The kept tools by name, or None: no file, another fingerprint, or a document whose
        digest does not match what it holds (a tool short, an edited schema)."""
        data = load_kept(self.path, self.key)
        if data is None:
            return None
        tools = data.get("tools")
        if not isinstance(tools, dict) or not tools or data.get("digest") != _digest(tools):
            return None
        return tools

    def save(self, server: MCPServer, arg_names: dict[str, set[str]], mutating: set[str]) -> None:
        """Keep every registered tool as published (after slimming), with what registration knew of
        it: the argument names the unknown-argument guard allows and whether it mutates."""
        tools = {}
        for t in sdk_private.tools_of(server):
            tools[t.name] = {
                "title": t.title,
                "description": t.description,
                "annotations": t.annotations.model_dump(exclude_none=True) if t.annotations else None,
                "context_kwarg": t.context_kwarg,
                "arg_names": sorted(arg_names[t.name]),
                "mutates": t.name in mutating,
                "parameters": t.parameters,
                "output_schema": t.fn_metadata.output_schema,
                "wrap_output": t.fn_metadata.wrap_output,
            }
        keep(self.path, self.key, {"tools": tools, "digest": _digest(tools)})


def _digest(tools: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(tools, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class _Unchecked(dict[str, Any]):
    """Arguments the SDK passed on before the tool's argument model existed (see DeferredArguments)."""


ToolLoader = Callable[[], Callable[..., Awaitable[Any]]]


class DeferredArguments:
    """A kept tool's ``fn_metadata`` until its first call, which loads the engine.

    The kept output schema is published from launch. The SDK's ``Tool.run`` validates the
    arguments, then calls ``call_fn``; before the first call there is no argument model (it is
    built from the real tool function, which needs the engine), so ``validate_arguments`` passes
    the arguments on unchecked, and ``call_fn`` loads the tool function and builds the model on a
    worker thread (the engine's ~0.2 s of imports stay off the event loop), then validates as the
    SDK would have, with the same error text. The real model then takes this object's place on
    the tool, so later calls cost what they always did."""

    def __init__(self, tool_name: str, entry: dict[str, Any], load: ToolLoader) -> None:
        self.tool: Tool | None = None
        self.name = tool_name
        self.output_schema: dict[str, Any] | None = entry["output_schema"]
        self.output_model = None
        self.wrap_output: bool = bool(entry["wrap_output"])
        self._load = load  # blocking: the tool's real function (the first call imports the engine)
        self._lean: LeanArguments | None = None

    def real(self) -> LeanArguments:
        """The tool's argument model (blocking: called on a worker thread). Two first calls at once
        may both build it: the same model, and either serves."""
        if self._lean is not None:
            return self._lean
        tool = self.tool
        assert tool is not None
        skip = [tool.context_kwarg] if tool.context_kwarg else []
        built = func_metadata(self._load(), skip_names=skip, structured_output=False)  # arguments only
        lean = LeanArguments(
            arg_model=built.arg_model, output_schema=self.output_schema, output_model=None,
            wrap_output=self.wrap_output,
        )  # fmt: skip
        self._lean = lean
        tool.fn_metadata = lean
        return lean

    def validate_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        if self._lean is not None:
            return self._lean.validate_arguments(arguments)
        return _Unchecked(arguments)

    async def call_fn(
        self,
        fn: Callable[..., Any],
        fn_is_async: bool,
        arguments: dict[str, Any],
        arguments_to_pass_directly: dict[str, Any] | None = None,
    ) -> Any:
        lean = self._lean
        if lean is None:
            lean = await anyio.to_thread.run_sync(self.real)
        if isinstance(arguments, _Unchecked):
            try:
                arguments = lean.validate_arguments(dict(arguments))
            except ValidationError as exc:  # as the SDK reports a validation failure
                raise ToolError(str(exc)) from exc
        return await lean.call_fn(fn, fn_is_async, arguments, arguments_to_pass_directly)

    def convert_result(self, result: Any) -> Any:
        return self.real().convert_result(result)


def kept_tool(fn: Any, name: str, entry: dict[str, Any], annotations: Any, load: ToolLoader) -> Tool:
    """The SDK's ``Tool`` for ``fn`` with its kept schemas, its argument model deferred."""
    deferred = DeferredArguments(name, entry, load)
    tool = Tool.model_construct(
        fn=fn, name=name, title=entry["title"], description=entry["description"],
        parameters=entry["parameters"], fn_metadata=deferred, is_async=True,
        context_kwarg=entry["context_kwarg"], resolved_params={}, resolver_plans={},
        annotations=annotations, icons=None, meta=None,
    )  # fmt: skip
    deferred.tool = tool
    return tool


def built_tool(
    fn: Any, name: str, title: str, description: str, annotations: Any, parameters: dict[str, Any],
    metadata: Any, context_kwarg: str | None,
) -> Tool:
    """The SDK's ``Tool`` for ``fn`` with schemas and argument metadata an earlier server of this
    process built for the same signature (toolkit._BUILT)."""
    return Tool.model_construct(
        fn=fn, name=name, title=title, description=description, parameters=parameters,
        fn_metadata=metadata, is_async=True, context_kwarg=context_kwarg, resolved_params={},
        resolver_plans={}, annotations=annotations, icons=None, meta=None,
    )  # fmt: skip
