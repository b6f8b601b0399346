"""The layer rules of docs/architecture.md, checked on every run so a wrong arrow fails CI.

- import-linter contracts (pyproject ``[tool.importlinter]``): layers never import upwards, core/ is
  sans-IO, only mcp/ imports the MCP SDK, only serial/ touches pyserial/select/ptys, threads only in
  serial/ and store/.
- Files are opened only where opening them is the job: store/ (profiles, captures), serial/ (the
  device asked for — a tty, a PTY, a replayed capture), the operator's config file, the viewer's
  packaged assets. A new ``open()`` elsewhere fails here.
- mcp/ makes no call on a port handle, takes no connection lock, touches no connection internals.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "serial_mcp"
FILE_CALLS = {"read_text", "write_text", "read_bytes", "write_bytes", "mkstemp", "NamedTemporaryFile"}
MAY_OPEN_FILES = {
    "store": "the stores: profiles and captures",
    "serial": "the device it was asked to open (tty, PTY, replayed capture)",
    "config.py": "the operator's --config file, read once at startup",
    "view/render.py": "the viewer's packaged CSS/JS assets",
    "view/command.py": "the capture file, FIFO or pipe the user names on the command line (issue 36.9)",
    "cli.py": "/dev/null over a stdout whose reader has gone, so the last flush cannot fail (issue 42.4)",
    "mcp/tool_cache.py": "the kept tool list beside the package's bytecode, opened O_NOFOLLOW|O_NONBLOCK and "
    "checked like code (issue 36.4)",
}


def _modules(sub: str = "") -> list[Path]:
    return sorted((PACKAGE / sub).rglob("*.py"))


@pytest.mark.slow
def test_import_contracts_hold() -> None:
    from importlinter.cli import lint_imports

    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    finally:
        os.chdir(cwd)
    assert code == 0, "an import contract is broken: run `lint-imports` for the report"


def _opens_files(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id == "open":
            found.append(f"open() line {node.lineno}")
        elif isinstance(f, ast.Attribute):
            owner = f.value.id if isinstance(f.value, ast.Name) else None
            if f.attr in FILE_CALLS or (f.attr == "open" and owner in ("os", "io", "Path")):
                found.append(f"{ast.unparse(f)}() line {node.lineno}")
    return found


@pytest.mark.slow
def test_files_are_opened_only_where_that_is_the_job() -> None:
    offenders = {}
    for path in _modules():
        rel = path.relative_to(PACKAGE).as_posix()
        if any(rel == k or rel.startswith(k + "/") for k in MAY_OPEN_FILES):
            continue
        calls = _opens_files(ast.parse(path.read_text()))
        if calls:
            offenders[rel] = calls
    assert not offenders, f"move file access into store/ (or say why in MAY_OPEN_FILES): {offenders}"


CONNECTION_INTERNALS = {"handle", "lock", "line_lock", "tx", "ring", "cursors", "log", "listeners",
                        "responders", "recorder", "closers", "mirror", "options", "_pump"}


@pytest.mark.parametrize("path", _modules("mcp"), ids=lambda p: p.name)
def test_mcp_layer_touches_no_connection_internals(path: Path) -> None:
    """The tools are thin: arguments → one engine operation → result. A ``conn.handle``,
    ``conn.lock`` or ``conn.ring`` in mcp/ means engine logic crept back in."""
    tree = ast.parse(path.read_text())
    bad = [
        f"{ast.unparse(n)} line {n.lineno}"
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute)
        and n.attr in CONNECTION_INTERNALS
        and isinstance(n.value, ast.Name)
        and n.value.id in ("conn", "c", "connection")
    ]
    assert not bad, bad


@pytest.mark.slow
def test_every_error_code_raised_is_in_the_one_enum() -> None:
    """Codes are the contract: every code given to an error or a tool error is an ``ErrorCode``."""
    from serial_mcp.errors import FAMILIES, ErrorCode

    raising = {"error_result", *(fam.__name__ for fam in FAMILIES)}
    stray = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            first = node.args[0]
            if name in raising and isinstance(first, ast.Constant):
                stray.append(f"{path.name}:{node.lineno} {first.value!r} (use ErrorCode)")
            elif (
                name in raising
                and isinstance(first, ast.Attribute)
                and isinstance(first.value, ast.Name)
                and first.value.id == "ErrorCode"
            ):
                assert first.attr in ErrorCode.__members__, first.attr
    assert not stray, stray
