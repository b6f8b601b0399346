"""Layer rules inside the package, read from the source (issue 27, items 4 and 7).

- engine/ keeps out of a connection's insides: it calls named operations on ``Connection``
  (``flush_cursor``, ``rx_status``, ``unread_before``, ``tx.turn`` ...) and never takes its thread
  lock, nor reads its ring or cursor table, nor touches a private name. The lock is the port
  machinery's (serial/), where a reader, a responder and the event watch share it with the pump.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "serial_mcp"
ENGINE = sorted((PACKAGE / "engine").glob("*.py"))

# What the engine may not reach into: the locks (the connection's thread lock under any name, the TX
# lock), the RX ring, the cursor table, and (issue 27.4) the port handle and the line lock: the engine
# calls the named operations of the connection and its parts instead (serial/port_controls.py).
CONNECTION_INSIDES = {"lock", "_lock", "thread_lock", "ring", "cursors", "handle", "line_lock"}
CONNECTION_NAMES = {"conn", "c", "connection"}


def _connection_names(tree: ast.AST) -> set[str]:
    """The usual names of a connection, plus every argument annotated ``Connection``."""
    names = set(CONNECTION_NAMES)
    for node in ast.walk(tree):
        if not isinstance(node, ast.arg) or node.annotation is None:
            continue
        if ast.unparse(node.annotation).strip("'\"").startswith("Connection"):
            names.add(node.arg)
    return names


def _is_connection(expr: ast.expr, names: set[str]) -> bool:
    """``conn``, ``conn.tx``, ``opened.conn``, ``self.conn.tx`` ...: a connection or a part of one."""
    while isinstance(expr, ast.Attribute):
        if expr.attr in ("conn", "connection"):
            return True
        expr = expr.value
    return isinstance(expr, ast.Name) and expr.id in names


def connection_insides_touched(source: str) -> list[str]:
    tree = ast.parse(source)
    names = _connection_names(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not _is_connection(node.value, names):
            continue
        private = node.attr.startswith("_") and not node.attr.startswith("__")
        assigned = isinstance(node.ctx, ast.Store)  # issue 41.3: its fields change by named operations
        if node.attr in CONNECTION_INSIDES or private or assigned:
            found.append(f"{ast.unparse(node)} line {node.lineno}")
    return found


def test_the_rule_sees_what_it_forbids() -> None:
    """The checker itself: each way in is caught, and a result model's own ``cursors`` is not."""
    src = (
        "def f(conn, target: Connection, status):\n"
        "    with conn.lock: pass\n"
        "    target.ring.end_offset\n"
        "    conn.tx.lock.release()\n"
        "    opened.conn.cursors\n"
        "    conn._waiters\n"
        "    status.cursors.get('default')\n"
        "    self.cursors\n"
        "    conn.owner = 'x'\n"
        "    status.owner = 'you'\n"
    )
    assert len(connection_insides_touched(src)) == 6


@pytest.mark.parametrize("path", ENGINE, ids=lambda p: p.name)
def test_engine_keeps_out_of_connection_insides(path: Path) -> None:
    touched = connection_insides_touched(path.read_text())
    assert not touched, f"call a named operation on Connection instead: {touched}"


# --- one responsibility per module: none over MAX_MODULE_LINES ---------------------------------------

MAX_MODULE_LINES = 500
LONG_BY_NATURE = {"messages.py": "the table of user-facing text (append-only blocks, one per issue)"}


def test_no_module_is_over_500_lines() -> None:
    """A module that grew past 500 lines holds more than one job: split it along one (re-export
    the names other code imports, as ``engine/results.py`` does for its families)."""
    long = {
        path.relative_to(PACKAGE).as_posix(): n
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).as_posix() not in LONG_BY_NATURE
        and (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


# --- a flat engine: an operation module never imports another -------------------------------------

OPS = sorted((PACKAGE / "engine").glob("*_ops.py"))


def ops_imported(source: str) -> list[str]:
    """The ``engine/*_ops`` modules ``source`` imports (``from serial_mcp.engine import x_ops``,
    ``from serial_mcp.engine.x_ops import ...``, ``import serial_mcp.engine.x_ops``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            if node.module == "serial_mcp.engine":
                found += [a.name for a in node.names if a.name.endswith("_ops")]
            elif node.module.startswith("serial_mcp.engine.") and node.module.endswith("_ops"):
                found.append(node.module.rsplit(".", 1)[1])
        elif isinstance(node, ast.Import):
            found += [a.name.rsplit(".", 1)[1] for a in node.names if a.name.endswith("_ops")]
    return found


def test_the_ops_rule_sees_every_import_form() -> None:
    src = (
        "from serial_mcp.engine import results, io_ops\n"
        "from serial_mcp.engine.line_ops import apply_settings\n"
        "import serial_mcp.engine.respond_ops\n"
        "from serial_mcp.engine import writing, line_actions\n"
    )
    assert ops_imported(src) == ["io_ops", "line_ops", "respond_ops"]


@pytest.mark.parametrize("path", OPS, ids=lambda p: p.name)
def test_no_operation_module_imports_another(path: Path) -> None:
    """Operations stand side by side; what two of them share lives in a lower engine module
    (``writing``, ``exchange``, ``line_actions``, ``responding`` ...)."""
    imported = ops_imported(path.read_text())
    assert not imported, f"{path.name} imports {imported}: move the shared part to a lower module"


DECODER_USERS = [PACKAGE / "core" / "decode.py", PACKAGE / "core" / "framing" / "scan.py"]


@pytest.mark.parametrize("path", DECODER_USERS, ids=lambda p: p.name)
def test_decoders_declare_their_capabilities(path: Path) -> None:
    """Issue 41.3: what a framing or parser can do beyond the basics (skip bytes, end a frame at a
    silence, report a damaged candidate, judge a prompt, parse fields fast) is a declared Protocol,
    not a ``getattr`` probe into its insides."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    probes = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "hasattr")
    ]
    assert not probes, f"{path.name}: getattr/hasattr probes at lines {probes}"
