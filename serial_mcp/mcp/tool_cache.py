"""The tools' published schemas kept between launches, so ``tools/list`` needs no pydantic build.

At start-up the SDK builds, for each of the ~30 tools, an argument model from the signature, its
JSON schema and the result model's JSON schema: ~0.15 s of the ~0.3 s serial-mcp adds to a bare SDK
server's launch (issue 27: ≤ 1.15× of it). None of that changes between two launches of the same
code, so ``serial-mcp`` keeps the slimmed schemas in the user's cache directory, under a fingerprint
of everything they are made from: the Python, ``mcp``, ``pydantic`` and ``pydantic-core`` versions
and the name, size and modification time of every module of ``serial_mcp``. A launch whose
fingerprint matches publishes the kept schemas and builds each tool's argument model on its first
call (``DeferredArguments``: the same validation, a few ms once per tool); any other launch builds
everything as before and rewrites the file. An unreadable, corrupt or foreign file is a miss, never
an error, and only the stdio/HTTP server uses the cache (``build_server(tool_cache=...)``); tests
and the Python API build as before.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import sys
from pathlib import Path
from typing import Any, Final

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import func_metadata

from serial_mcp.mcp import sdk_private
from serial_mcp.mcp.tool_arguments import LeanArguments
from serial_mcp.store.kept_json import keep, load_kept

FORMAT: Final = 1
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
    """The file of kept schemas: ``load`` (None on any miss) and ``save`` after a full build."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_path()
        self.key = fingerprint()

    def load(self) -> dict[str, dict[str, Any]] | None:
        return load_kept(self.path, self.key)

    def save(self, server: MCPServer) -> None:
        tools = {
            t.name: {
                "parameters": t.parameters,
                "output_schema": t.fn_metadata.output_schema,
                "wrap_output": t.fn_metadata.wrap_output,
            }
            for t in sdk_private.tools_of(server)
        }
        keep(self.path, self.key, tools)


class DeferredArguments:
    """A tool's ``fn_metadata`` until its first call: the kept output schema is published; the first
    ``validate_arguments`` builds the real argument model (the SDK's ``func_metadata``, made lean as
    every tool's is) and puts it in its place on the tool, so later calls cost what they always did."""

    def __init__(self, tool_name: str, entry: dict[str, Any]) -> None:
        self.tool: Tool | None = None
        self.name = tool_name
        self.output_schema: dict[str, Any] | None = entry["output_schema"]
        self.output_model = None
        self.wrap_output: bool = bool(entry["wrap_output"])

    def real(self) -> LeanArguments:
        tool = self.tool
        assert tool is not None
        if isinstance(tool.fn_metadata, LeanArguments):
            return tool.fn_metadata
        skip = [tool.context_kwarg] if tool.context_kwarg else []
        built = func_metadata(tool.fn, skip_names=skip, structured_output=False)  # arguments only
        lean = LeanArguments(
            arg_model=built.arg_model, output_schema=self.output_schema, output_model=None,
            wrap_output=self.wrap_output,
        )  # fmt: skip
        tool.fn_metadata = lean
        return lean

    def validate_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        return self.real().validate_arguments(arguments)

    async def call_fn(self, *args: Any, **kwargs: Any) -> Any:
        return await self.real().call_fn(*args, **kwargs)

    def convert_result(self, result: Any) -> Any:
        return self.real().convert_result(result)


def kept_tool(
    fn: Any, name: str, title: str, description: str, annotations: Any, entry: dict[str, Any]
) -> Tool:
    """The SDK's ``Tool`` for ``fn`` with its kept schemas, its argument model deferred."""
    from mcp.server.mcpserver.utilities.context_injection import find_context_parameter

    deferred = DeferredArguments(name, entry)
    tool = Tool.model_construct(
        fn=fn, name=name, title=title, description=description, parameters=entry["parameters"],
        fn_metadata=deferred, is_async=True, context_kwarg=find_context_parameter(fn),
        resolved_params={}, resolver_plans={}, annotations=annotations, icons=None, meta=None,
    )  # fmt: skip
    deferred.tool = tool
    return tool
