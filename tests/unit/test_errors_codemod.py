"""tools/errors_codemod.py: the raise-site rewrite of issue 41.4 (every ``SerialMcpError(ErrorCode.X,
...)`` to its family) is repeatable, so it is tested on a sample and on the tree: after it ran,
every raise site names its code's family and a second run changes nothing."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from serial_mcp.errors import FAMILY, ErrorCode, SerialMcpError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def codemod() -> ModuleType:
    spec = importlib.util.spec_from_file_location("errors_codemod", ROOT / "tools" / "errors_codemod.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


SAMPLE = b"""from serial_mcp import messages
from serial_mcp.errors import ErrorCode, SerialMcpError


class Gone(SerialMcpError):
    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.CONNECTION_NOT_FOUND, message)


def f(port: str, conn: Conn) -> None:
    if port:
        raise SerialMcpError(ErrorCode.BUSY, messages.X.format(port=port, id=conn.id, n=len(port)))
    raise SerialMcpError(ErrorCode.INVALID_ARGUMENT, messages.Y.format(id=pick(conn)))
"""

EXPECTED = b"""from serial_mcp import messages
from serial_mcp.errors import ErrorCode, InvalidArgument, NotFound, PortError


class Gone(NotFound):
    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.CONNECTION_NOT_FOUND, message)


def f(port: str, conn: Conn) -> None:
    if port:
        raise PortError(ErrorCode.PORT_BUSY, messages.X.format(port=port, id=conn.id, n=len(port)), port=port, connection_id=conn.id)
    raise InvalidArgument(messages.Y.format(id=pick(conn)))
"""


def test_the_codemod_names_families_aliases_bases_context_and_imports(codemod: ModuleType) -> None:
    out = codemod.rewrite(SAMPLE)
    assert out == EXPECTED
    assert codemod.rewrite(out) == out and not codemod.plan(out)  # idempotent


def test_the_codemod_formats_only_what_it_rewrote(codemod: ModuleType) -> None:
    untouched = b"x = [1,2]  # not ruff-formatted, and not the codemod's to format\n"
    out = codemod.rewrite(SAMPLE + untouched, Path("serial_mcp/sample.py"))
    assert out.endswith(untouched)
    assert max(len(line) for line in out.decode().splitlines()) <= 110
    assert b"        raise PortError(\n            ErrorCode.PORT_BUSY,\n" in out


def _raise_sites(tree: ast.AST) -> list[tuple[int, str, ErrorCode | None]]:
    """Each call of an error class: its line, its name and its literal code (None if not one)."""
    names = {fam.__name__ for fam in FAMILY.values()}
    return [
        (n.lineno, n.func.id, _literal_code(n.args[0] if n.args else None))
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in names
    ]


def _literal_code(node: ast.expr | None) -> ErrorCode | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "ErrorCode":
        return ErrorCode[node.attr]
    return None


def _wrong(name: str, code: ErrorCode | None) -> bool:
    if name == SerialMcpError.__name__:  # the base is raised for internal_error only, never a code it picks
        return code is not ErrorCode.INTERNAL_ERROR
    return code is not None and FAMILY[code].__name__ != name


def test_every_raise_site_names_its_codes_family_and_the_codemod_has_nothing_left(
    codemod: ModuleType,
) -> None:
    wrong, left = [], []
    for path in sorted([*(ROOT / "serial_mcp").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]):
        if path.name == "errors.py":
            continue
        src = path.read_bytes()
        tree = ast.parse(src)
        rel = path.relative_to(ROOT)
        wrong += [
            f"{rel}:{line} {name}({code})" for line, name, code in _raise_sites(tree) if _wrong(name, code)
        ]
        left += [f"{rel}:{s.first_line}" for s in codemod.plan(src, tree)]
    assert not wrong, wrong
    assert not left, f"run PYTHONPATH=$PWD python3 tools/errors_codemod.py: {left}"


def test_the_fixed_code_subclasses_are_caught_by_their_family() -> None:
    from serial_mcp.config import ConfigError
    from serial_mcp.core.capture import CaptureError
    from serial_mcp.core.profile_model import ProfileStoreError

    for exc in (ConfigError("bad"), CaptureError("bad", 3), ProfileStoreError("bad")):
        assert isinstance(exc, FAMILY[exc.code]), (type(exc), exc.code)
