"""The tools' published schemas kept between launches, so ``tools/list`` needs no pydantic build.

At start-up the SDK builds, for each of the ~30 tools, an argument model from the signature, its
JSON schema and the result model's JSON schema: ~0.15 s of the ~0.3 s serial-mcp adds to a bare SDK
server's launch (issue 27: ≤ 1.15× of it). None of that changes between two launches of the same
code, so ``serial-mcp`` keeps each tool as published (slimmed schemas, title, description,
annotations, argument names) under a fingerprint of everything it is made from: the Python, ``mcp``,
``pydantic`` and ``pydantic-core`` versions and the name, size and modification time of every module
of ``serial_mcp``. A launch whose fingerprint matches publishes the kept tools without importing the
engine at all (another ~0.2 s: its operations, options and result models); each tool's first call
loads the engine and builds that tool's argument model on a worker thread (``DeferredArguments``:
the same validation, with the same error text, and an argument the real function lacks refused
whatever the kept file says), and once the first ``tools/list`` has been answered the engine is
loaded in the background anyway (mcp/engine_loader.py). Any other launch builds everything as before.

What the model reads and the server enforces must be as hard to change as the code (issue 36.4): the
kept file lives beside the package's own bytecode (``serial_mcp/__pycache__/``), never in the user's
cache directory, and is read only when it and its directory belong to the owner of the package's
files and no one else may write them (as a ``.pyc``: whoever can replace it can replace the code). A
launch that may not write there (a system-wide install run by another user) builds every time; the
installer makes the file with ``python -m serial_mcp.mcp.server``. The file is opened with
``O_NOFOLLOW | O_NONBLOCK`` and judged on its descriptor (a regular file of at most
``MAX_KEPT_BYTES``), its document checked entry by entry; a FIFO, a link, a device, a foreign owner,
corrupt JSON or a malformed entry is a miss and a full build, never an error, a hang or an exit. Only
the stdio/HTTP server uses it (``build_server(tool_cache=...)``); tests and the Python API build as
before.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import inspect
import json
import logging
import os
import stat
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools.base import Tool
from pydantic import ValidationError

from serial_mcp.mcp import sdk_private
from serial_mcp.mcp.sdk_private import ToolError, func_metadata
from serial_mcp.store.atomic import replace_atomic

if TYPE_CHECKING:  # defining it takes ~10 ms: a warm launch leaves it for the first call
    from serial_mcp.mcp.tool_arguments import LeanArguments

log = logging.getLogger(__name__)

# A tool argument named by a Python keyword: the wire name and the parameter that receives it.
KEYWORD_ALIASES: Final = {"from": "from_"}

FORMAT: Final = 3
FILE_NAME: Final = "serial-mcp-tools.json"
MAX_KEPT_BYTES: Final = 4 << 20  # the kept tools are ~150 KiB
_PACKAGE_ROOT: Final = Path(__file__).resolve().parents[1]
_VERSIONS: Final = ("mcp", "pydantic", "pydantic-core")
_OPEN_FLAGS: Final = (
    os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
)


def default_path() -> Path:
    """Beside the package's own bytecode: as hard to write as the code itself."""
    return _PACKAGE_ROOT / "__pycache__" / FILE_NAME


def _owner() -> int:
    return os.stat(_PACKAGE_ROOT / "__init__.py").st_uid


def _guarded(st: os.stat_result, owner: int) -> bool:
    """Owned by the package's owner, and no one else may write it."""
    return st.st_uid == owner and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def read_kept(path: Path, max_bytes: int = MAX_KEPT_BYTES) -> bytes | None:
    """The bytes of the kept file, or None: missing, a link, not a regular file (a FIFO, a device),
    larger than ``max_bytes``, or it or its directory writable by anyone but the package's owner."""
    try:
        owner = _owner()
        if not _guarded(os.lstat(path.parent), owner):
            return None
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes or not _guarded(st, owner):
            return None
        chunks: list[bytes] = []
        left = max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        return data if len(data) <= max_bytes else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _optional(value: Any, kind: type) -> bool:
    return value is None or isinstance(value, kind)


def _entry_ok(name: Any, entry: Any) -> bool:
    """A kept tool's shape: every field toolkit.kept and kept_tool read, of its type."""
    if not isinstance(name, str) or not name or not isinstance(entry, dict):
        return False
    names = entry.get("arg_names")
    annotations = entry.get("annotations")
    return (
        _optional(entry.get("title"), str)
        and _optional(entry.get("description"), str)
        and _optional(entry.get("context_kwarg"), str)
        and isinstance(names, list)
        and all(isinstance(n, str) for n in names)
        and isinstance(entry.get("mutates"), bool)
        and isinstance(entry.get("wrap_output"), bool)
        and isinstance(entry.get("parameters"), dict)
        and _optional(entry.get("output_schema"), dict)
        and _optional(annotations, dict)
        and all(isinstance(k, str) and isinstance(v, bool | str) for k, v in (annotations or {}).items())
    )


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
        """The kept tools by name, or None: no file or one not guarded like the code (see
        :func:`read_kept`), another fingerprint, a document whose digest does not match what it holds
        (a tool short, an edited schema) or any entry of the wrong shape."""
        raw = read_kept(self.path)
        if raw is None:
            return None
        try:
            doc = json.loads(raw)
            data = doc["data"] if isinstance(doc, dict) and doc.get("fingerprint") == self.key else None
            tools = data.get("tools") if isinstance(data, dict) else None
            if not isinstance(tools, dict) or not tools or data.get("digest") != _digest(tools):  # type: ignore[union-attr]
                return None
            if not all(_entry_ok(name, entry) for name, entry in tools.items()):
                return None
        except Exception:  # corrupt JSON, absurd nesting: a miss, and a full build
            log.debug("kept tools in %s not used", self.path, exc_info=True)
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
        doc = {"fingerprint": self.key, "data": {"tools": tools, "digest": _digest(tools)}}
        try:
            if os.geteuid() != _owner():
                return  # read back only if the package's owner wrote it: not worth writing
            self.path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
            replace_atomic(self.path, json.dumps(doc, separators=(",", ":")).encode())
            os.chmod(self.path, 0o644)
        except OSError as exc:
            log.debug("tools not kept in %s: %s", self.path, exc)


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
        self._kept_names = frozenset(entry["arg_names"])
        self._load = load  # blocking: the tool's real function (the first call imports the engine)
        self._lean: LeanArguments | None = None
        self._names: frozenset[str] = frozenset()  # the real function's argument names, as called

    def real(self) -> LeanArguments:
        """The tool's argument model (blocking: called on a worker thread). Two first calls at once
        may both build it: the same model, and either serves. It takes this object's place on the
        tool only when the real function's argument names are the kept ones (else this object stays,
        and refuses an argument the function lacks)."""
        if self._lean is not None:
            return self._lean
        tool = self.tool
        assert tool is not None
        fn = self._load()
        skip = [tool.context_kwarg] if tool.context_kwarg else []
        built = func_metadata(fn, skip_names=skip, structured_output=False)  # arguments only
        from serial_mcp.mcp.tool_arguments import LeanArguments

        lean = LeanArguments(
            arg_model=built.arg_model, output_schema=self.output_schema, output_model=None,
            wrap_output=self.wrap_output,
        )  # fmt: skip
        self._names = _wire_names(fn, skip)
        self._lean = lean
        if self._names == self._kept_names:
            tool.fn_metadata = lean
        return lean

    def _known(self, arguments: dict[str, Any]) -> None:
        """Refuse, as pydantic refuses an extra input, any argument the real function lacks."""
        unknown = sorted(k for k in arguments if k not in self._names)
        if unknown:
            errors: list[Any] = [
                {"type": "extra_forbidden", "loc": (k,), "input": arguments[k]} for k in unknown
            ]
            raise ValidationError.from_exception_data(f"{self.name}Arguments", errors)

    def validate_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        if self._lean is not None:
            self._known(arguments)
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
                self._known(arguments)
                arguments = lean.validate_arguments(dict(arguments))
            except ValidationError as exc:  # as the SDK reports a validation failure
                raise ToolError(str(exc)) from exc
        return await lean.call_fn(fn, fn_is_async, arguments, arguments_to_pass_directly)

    def convert_result(self, result: Any) -> Any:
        return self.real().convert_result(result)


def _wire_names(fn: Any, skip: list[str]) -> frozenset[str]:
    """The argument names a caller uses for ``fn`` (toolkit's keyword aliases applied)."""
    wire = {py: w for w, py in KEYWORD_ALIASES.items()}
    params = inspect.signature(fn, eval_str=True).parameters
    return frozenset(wire.get(n, n) for n in params if n not in skip)


def kept_tool(fn: Any, name: str, entry: dict[str, Any], annotations: Any, load: ToolLoader) -> Tool:
    """The SDK's ``Tool`` for ``fn`` with its kept schemas, its argument model deferred."""
    deferred = DeferredArguments(name, entry, load)
    title, description = entry["title"], entry["description"]
    tool = built_tool(
        fn, name, title, description, annotations, entry["parameters"], deferred, entry["context_kwarg"]
    )
    deferred.tool = tool
    return tool


def built_tool(
    fn: Any,
    name: str,
    title: str,
    description: str,
    annotations: Any,
    parameters: dict[str, Any],
    metadata: Any,
    context_kwarg: str | None,
) -> Tool:
    """The SDK's ``Tool`` for ``fn`` with schemas and argument metadata an earlier server of this
    process built for the same signature (toolkit._BUILT)."""
    return Tool.model_construct(
        fn=fn, name=name, title=title, description=description, parameters=parameters,
        fn_metadata=metadata, is_async=True, context_kwarg=context_kwarg, resolved_params={},
        resolver_plans={}, annotations=annotations, icons=None, meta=None,
    )  # fmt: skip
