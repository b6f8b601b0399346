"""Rewrite error raise sites to their family class (issue 41.4). Repeatable and idempotent.

``SerialMcpError(ErrorCode.PORT_BUSY, msg)`` becomes ``PortError(ErrorCode.PORT_BUSY, msg)``, the
family read from the one table (``serial_mcp.errors.FAMILY``); ``SerialMcpError(ErrorCode.INVALID_ARGUMENT,
msg)`` becomes ``InvalidArgument(msg)``. Also, from the same table:

- a deprecated code name (``ErrorCode.BUSY``) becomes the code that survives (``ErrorCode.PORT_BUSY``);
- a subclass ``class X(SerialMcpError)`` that always raises one code (``super().__init__(ErrorCode.Y,
  ...)``) derives from that code's family instead, so ``except`` by family catches it;
- context: a family call whose message is ``messages.X.format(port=..., id=...)`` also passes
  ``port=`` / ``connection_id=`` (when the value is a plain name or attribute and not passed yet);
- the ``serial_mcp.errors`` imports gain the families used and lose the names no longer used.

Each rewritten statement is formatted with ``ruff format --range`` (only those lines: several
files are not ruff-formatted as a whole). A second run changes nothing.

Usage, from the repository root (the table is imported, so the package must be importable)::

    PYTHONPATH=$PWD python3 tools/errors_codemod.py            # rewrite serial_mcp/ and tests/
    PYTHONPATH=$PWD python3 tools/errors_codemod.py --check    # exit 1 if a file would change
    PYTHONPATH=$PWD python3 tools/errors_codemod.py FILE ...   # only these files
"""

from __future__ import annotations

import argparse
import ast
import itertools
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from serial_mcp.errors import FAMILY, ErrorCode, SerialMcpError

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PATHS = ("serial_mcp", "tests")
SKIP = {Path("serial_mcp/errors.py")}  # the table itself
FAMILY_NAMES = {fam.__name__ for fam in FAMILY.values()}
ERROR_MODULES = ("serial_mcp.errors", "serial_mcp")
# format keyword in the message -> context keyword of the error, and which values qualify
CONTEXT = {"port": "port", "id": "connection_id"}


@dataclass
class Site:
    """The edits of one statement: (start, end, text) in byte offsets of the source."""

    first_line: int
    last_line: int
    edits: list[tuple[int, int, str]] = field(default_factory=list)


class _Offsets:
    def __init__(self, data: bytes) -> None:
        self.starts = [0, *itertools.accumulate(len(line) + 1 for line in data.split(b"\n"))]

    def start(self, node: ast.expr | ast.stmt) -> int:
        return self.starts[node.lineno - 1] + node.col_offset

    def end(self, node: ast.expr | ast.stmt) -> int:
        assert node.end_lineno is not None and node.end_col_offset is not None
        return self.starts[node.end_lineno - 1] + node.end_col_offset


def _code_of(node: ast.expr | None) -> ErrorCode | None:
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "ErrorCode"
        and node.attr in ErrorCode.__members__
    ):
        return ErrorCode[node.attr]
    return None


def _plain(node: ast.expr, allow_str: bool) -> bool:
    """A name or attribute chain (``port``, ``conn.id``), or ``str()`` of one: safe to evaluate twice."""
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, ast.Attribute):
        return _plain(node.value, False)
    return (
        allow_str
        and isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "str"
        and len(node.args) == 1
        and not node.keywords
        and _plain(node.args[0], False)
    )


def _context(call: ast.Call, message: ast.expr | None, src: bytes, off: _Offsets) -> list[str]:
    """``port=...``/``connection_id=...`` to add to ``call``, read from its message's format keywords."""
    if not (
        isinstance(message, ast.Call)
        and isinstance(message.func, ast.Attribute)
        and message.func.attr == "format"
    ):
        return []
    given = {kw.arg for kw in call.keywords}
    if None in given:  # **details: leave it alone
        return []
    added = []
    for kw in message.keywords:
        name = CONTEXT.get(kw.arg or "")
        if name and name not in given and _plain(kw.value, allow_str=name == "port"):
            added.append(f"{name}={src[off.start(kw.value) : off.end(kw.value)].decode()}")
            given.add(name)
    return added


def _statements(tree: ast.Module) -> dict[int, ast.stmt]:
    """Each node's innermost enclosing statement, by ``id(node)``."""
    owner: dict[int, ast.stmt] = {}

    def visit(node: ast.AST, stmt: ast.stmt | None) -> None:
        if isinstance(node, ast.stmt):
            stmt = node
        if stmt is not None:
            owner[id(node)] = stmt
        for child in ast.iter_child_nodes(node):
            visit(child, stmt)

    visit(tree, None)
    return owner


def plan(src: bytes, tree: ast.Module | None = None) -> list[Site]:
    """The edits that bring ``src`` (parsed: ``tree``) to families, grouped by statement (imports aside)."""
    if not any(name.encode() in src for name in FAMILY_NAMES):
        return []
    tree = tree or ast.parse(src)
    off = _Offsets(src)
    owner: dict[int, ast.stmt] = {}
    sites: dict[int, Site] = {}

    def site(node: ast.AST) -> Site:
        if not owner:  # only for a file with something to do
            owner.update(_statements(tree))
        stmt = owner[id(node)]
        if isinstance(stmt, ast.ClassDef):  # a base class: only the header line
            return sites.setdefault(id(stmt), Site(stmt.lineno, stmt.lineno))
        return sites.setdefault(id(stmt), Site(stmt.lineno, stmt.end_lineno or stmt.lineno))

    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and (code := _code_of(node)) is not None
            and code.name != node.attr
        ):
            # a deprecated alias (ErrorCode.BUSY): the attribute name only
            s = off.end(node) - len(node.attr.encode())
            site(node).edits.append((s, off.end(node), code.name))
        elif isinstance(node, ast.ClassDef):
            _rebase(node, off, site)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            _call(node, src, off, site)
    return sorted(sites.values(), key=lambda s: s.first_line)


def _rebase(node: ast.ClassDef, off: _Offsets, site: Callable[[ast.AST], Site]) -> None:
    bases = [b for b in node.bases if isinstance(b, ast.Name) and b.id == SerialMcpError.__name__]
    if not bases:
        return
    codes = {
        code
        for call in ast.walk(node)
        if isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "__init__"
        and isinstance(call.func.value, ast.Call)
        and isinstance(call.func.value.func, ast.Name)
        and call.func.value.func.id == "super"
        and (code := _code_of(call.args[0] if call.args else None)) is not None
    }
    if len(codes) == 1 and (family := FAMILY[codes.pop()]) is not SerialMcpError:
        site(node).edits.append((off.start(bases[0]), off.end(bases[0]), family.__name__))


def _call(node: ast.Call, src: bytes, off: _Offsets, site: Callable[[ast.AST], Site]) -> None:
    assert isinstance(node.func, ast.Name)
    name = node.func.id
    edits: list[tuple[int, int, str]] = []
    code = _code_of(node.args[0] if node.args else None)
    if name == SerialMcpError.__name__ and code is not None and FAMILY[code] is not SerialMcpError:
        name = FAMILY[code].__name__
        edits.append((off.start(node.func), off.end(node.func), name))
        if code is ErrorCode.INVALID_ARGUMENT and len(node.args) == 2:  # the family's default code
            edits.append((off.start(node.args[0]), off.start(node.args[1]), ""))
    if name in FAMILY_NAMES and name != SerialMcpError.__name__:
        message = (
            node.args[1] if code is not None and len(node.args) > 1 else node.args[0] if node.args else None
        )
        if added := _context(node, message, src, off):
            last = max((off.end(a) for a in [*node.args, *(kw.value for kw in node.keywords)]), default=0)
            close = off.end(node) - 1  # the call's ")"
            comma = src.find(b",", last, close)
            if comma != -1:  # a trailing comma: one per line, as ruff keeps it
                edits.append((comma + 1, comma + 1, " " + ", ".join(added) + ","))
            else:
                edits.append((last, last, ", " + ", ".join(added)))
    if edits:
        site(node).edits.extend(edits)


def apply(src: bytes, edits: list[tuple[int, int, str]]) -> bytes:
    for start, end, text in sorted(edits, reverse=True):
        src = src[:start] + text.encode() + src[end:]
    return src


def fix_imports(src: bytes) -> bytes:
    """Each ``from serial_mcp.errors import`` statement: add the families its scope uses and does
    not bind, drop ``SerialMcpError``/``ErrorCode`` where its scope no longer uses them."""
    tree = ast.parse(src)
    off = _Offsets(src)
    edits = []
    for scope in ast.walk(tree):
        if not isinstance(scope, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        body_imports = [
            n
            for n in _own_nodes(scope)
            if isinstance(n, ast.ImportFrom) and n.module in ERROR_MODULES and n.level == 0
        ]
        if not body_imports:
            continue
        used = {n.id for n in ast.walk(scope) if isinstance(n, ast.Name)}
        bound = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        missing = sorted((FAMILY_NAMES - {SerialMcpError.__name__}) & used - bound)
        for imp in body_imports:
            names = [a.name for a in imp.names]
            if any(a.asname for a in imp.names) or imp.module != "serial_mcp.errors":
                continue
            keep = [n for n in names if n not in ("SerialMcpError", "ErrorCode") or n in used]
            new = keep + [m for m in missing if m not in keep]
            missing = []
            if new != names:
                edits.append((off.start(imp), off.end(imp), _import_line(new, imp.col_offset)))
    return apply(src, edits)


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of ``scope`` outside its nested functions and classes."""
    out: list[ast.AST] = []
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        out.append(node)
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            todo.extend(ast.iter_child_nodes(node))
    return out


def _import_line(names: list[str], indent: int) -> str:
    if not names:
        return "pass"
    line = f"from serial_mcp.errors import {', '.join(names)}"
    if indent + len(line) <= 110:
        return line
    pad = " " * (indent + 4)
    return "from serial_mcp.errors import (\n" + "".join(f"{pad}{n},\n" for n in names) + " " * indent + ")"


def _ruff(*args: str, src: bytes | None = None) -> bytes:
    done = subprocess.run(["ruff", *args], cwd=ROOT, input=src, check=src is not None, capture_output=True)
    return done.stdout


def rewrite(src: bytes, path: Path | None = None) -> bytes:
    """The rewritten source; with ``path`` (for ruff's settings), each rewritten statement formatted."""
    for s in reversed(plan(src)):  # bottom-up: a statement's edits do not move the ones above
        before = src.count(b"\n")
        src = apply(src, s.edits)
        if path is not None:
            last = s.last_line + src.count(b"\n") - before
            end = len(src.split(b"\n")[last - 1].decode()) + 1  # the end of the last line (1-based)
            where = f"--range={s.first_line}:1-{last}:{end}"
            src = _ruff("format", f"--stdin-filename={path}", where, "-", src=src)
    src = fix_imports(src)
    ast.parse(src)  # never write a file that does not parse
    return src


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file would change")
    ap.add_argument("paths", nargs="*", default=DEFAULT_PATHS)
    args = ap.parse_args(argv)
    files = sorted(
        f
        for p in args.paths
        for f in ([ROOT / p] if (ROOT / p).is_file() else (ROOT / p).rglob("*.py"))
        if f.relative_to(ROOT) not in SKIP
    )
    changed = []
    for f in files:
        old = f.read_bytes()
        if not plan(old) and fix_imports(old) == old:
            continue
        changed.append(f)
        if not args.check:
            f.write_bytes(rewrite(old, f.relative_to(ROOT)))
    for f in changed:
        print(f.relative_to(ROOT))
    if changed and not args.check:  # the import lists in ruff's order
        _ruff("check", "--quiet", "--fix", "--select", "I001", *map(str, changed))
    return 1 if changed and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
