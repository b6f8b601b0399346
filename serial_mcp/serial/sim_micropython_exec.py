"""The script runner behind ``sim://micropython``: a tiny, safe subset of Python, with MicroPython's output.

It walks the parsed tree itself (no ``eval``/``exec``): ``print``, assignment (``=``, ``+=`` …), ``for``
over a list/``range``, ``if``/``elif``/``else``, ``pass``, ``import`` of board modules, ``time.sleep*``
(no-ops), ``raise``, and expressions over numbers, strings, lists, f-strings and a few builtins. Anything
else raises ``NotImplementedError`` naming the simulation's limit. Errors come back as MicroPython prints
them (``Traceback (most recent call last):`` / ``  File "<stdin>", line N, in <module>`` / ``ValueError:
msg``), with ``\\r\\n`` line endings as on a UART. Work is bounded (statements, loop lengths, sizes) so a
script cannot hang or exhaust the server.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MAX_STEPS = 10_000
MAX_SIZE = 10_000  # longest string or list a script may build
FORMAT_SPEC = re.compile(r"[<>^=+\- #0]{0,3}\d{0,3}(?:\.\d{1,2})?[bcdeEfFgGnosxX%]?")
MODULES = frozenset({"time", "machine", "sys", "os", "gc", "micropython", "utime"})
NOOP_CALLS = frozenset({"sleep", "sleep_ms", "sleep_us", "collect"})
BUILTINS: dict[str, Callable[..., Any]] = {
    "len": len,
    "str": str,
    "int": int,
    "float": float,
    "abs": abs,
    "min": min,
    "max": max,
    "sum": sum,
    "hex": hex,
    "round": round,
    "bool": bool,
}
EXCEPTIONS = frozenset(
    {
        "Exception",
        "ValueError",
        "RuntimeError",
        "OSError",
        "TypeError",
        "KeyError",
        "IndexError",
        "AssertionError",
    }
)
BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


class ScriptError(Exception):
    """A MicroPython exception raised by the script: its type name, message and line."""

    def __init__(self, kind: str, message: str, line: int) -> None:
        super().__init__(message)
        self.kind, self.message, self.line = kind, message, line


@dataclass
class Result:
    stdout: str = ""
    stderr: str = ""
    value: Any = None  # the last expression statement's value (the friendly REPL prints it)


@dataclass
class _Run:
    names: dict[str, Any] = field(default_factory=dict)
    out: list[str] = field(default_factory=list)
    steps: int = 0
    line: int = 1
    value: Any = None


def run(source: str) -> Result:
    """Run ``source``; stdout and stderr as the board prints them."""
    try:
        tree = ast.parse(source.replace("\r\n", "\n").replace("\r", "\n"), "<stdin>")
    except SyntaxError as e:
        return Result(stderr=traceback("SyntaxError", "invalid syntax", e.lineno or 1, in_module=False))
    except (RecursionError, MemoryError, ValueError):
        return Result(stderr=traceback("MemoryError", "memory allocation failed", 1))
    state = _Run()
    try:
        _block(tree.body, state)
    except ScriptError as e:
        return Result("".join(state.out), traceback(e.kind, e.message, e.line))
    except RecursionError:
        return Result(
            "".join(state.out), traceback("RuntimeError", "maximum recursion depth exceeded", state.line)
        )
    return Result("".join(state.out), "", state.value)


def traceback(kind: str, message: str, line: int, *, in_module: bool = True) -> str:
    where = f'  File "<stdin>", line {line}' + (", in <module>" if in_module else "")
    return f"Traceback (most recent call last):\r\n{where}\r\n{kind}: {message}\r\n"


def _fail(state: _Run, kind: str, message: str) -> ScriptError:
    return ScriptError(kind, message, state.line)


def _block(body: list[ast.stmt], state: _Run) -> None:
    for stmt in body:
        state.steps += 1
        state.line = stmt.lineno
        if state.steps > MAX_STEPS:
            raise _fail(state, "RuntimeError", "sim://micropython: script ran too many steps")
        _stmt(stmt, state)


def _stmt(stmt: ast.stmt, state: _Run) -> None:
    state.value = None
    if isinstance(stmt, ast.Expr):
        state.value = _expr(stmt.value, state)
    elif isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
        value = _expr(stmt.value, state)
        for target in stmt.targets:
            state.names[target.id] = value  # type: ignore[attr-defined]
    elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        state.names[stmt.target.id] = _binop(
            stmt.op, _name(stmt.target.id, state), _expr(stmt.value, state), state
        )
    elif isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name) and not stmt.orelse:
        for item in _iterable(_expr(stmt.iter, state), state):
            state.names[stmt.target.id] = item
            _block(stmt.body, state)
    elif isinstance(stmt, ast.If):
        _block(stmt.body if _expr(stmt.test, state) else stmt.orelse, state)
    elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
        for alias in stmt.names:
            module = stmt.module if isinstance(stmt, ast.ImportFrom) else alias.name
            if (module or "").split(".")[0] not in MODULES:
                raise _fail(state, "ImportError", f"no module named '{module}'")
            state.names[alias.asname or alias.name] = _Module(alias.name)
    elif isinstance(stmt, ast.Raise) and stmt.exc is not None:
        raise _raised(stmt.exc, state)
    elif not isinstance(stmt, ast.Pass):
        raise _unsupported(state, type(stmt).__name__)


def _unsupported(state: _Run, what: str) -> ScriptError:
    return _fail(state, "NotImplementedError", f"sim://micropython does not simulate {what}")


@dataclass(frozen=True)
class _Module:
    name: str


def _raised(exc: ast.expr, state: _Run) -> ScriptError:
    call = exc if isinstance(exc, ast.Call) else None
    name = call.func if call is not None else exc
    if not isinstance(name, ast.Name) or name.id not in EXCEPTIONS:
        return _fail(state, "TypeError", "exceptions must derive from BaseException")
    args = [_expr(a, state) for a in call.args] if call is not None else []
    return _fail(state, name.id, str(args[0]) if args else "")


def _name(name: str, state: _Run) -> Any:
    if name in state.names:
        return state.names[name]
    if name in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[name]
    raise _fail(state, "NameError", f"name '{name}' isn't defined")


def _iterable(value: Any, state: _Run) -> list[Any]:
    if isinstance(value, (range, list, tuple, str)) and len(value) <= MAX_SIZE:
        return list(value)
    raise _fail(state, "TypeError", "'object' isn't iterable")


def _sized(value: Any, state: _Run) -> Any:
    if isinstance(value, (str, list, tuple)) and len(value) > MAX_SIZE:
        raise _fail(state, "MemoryError", "memory allocation failed")
    return value


def _binop(op: ast.operator, a: Any, b: Any, state: _Run) -> Any:
    if isinstance(op, ast.Pow):
        if not (isinstance(a, (int, float)) and isinstance(b, int) and abs(b) <= 64 and abs(a) <= 1 << 32):
            raise _unsupported(state, "this power")
        return a**b
    fn = BINOPS.get(type(op))
    if fn is None:
        raise _unsupported(state, type(op).__name__)
    if (
        isinstance(op, ast.Mult)
        and isinstance(a, (str, list))
        and isinstance(b, int)
        and len(a) * b > MAX_SIZE
    ):
        raise _fail(state, "MemoryError", "memory allocation failed")
    try:
        return _sized(fn(a, b), state)
    except ZeroDivisionError:
        raise _fail(state, "ZeroDivisionError", "divide by zero") from None
    except TypeError:
        raise _fail(state, "TypeError", "unsupported types for operator") from None


def _expr(node: ast.expr, state: _Run) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return _name(node.id, state)
    if isinstance(node, ast.BinOp):
        return _binop(node.op, _expr(node.left, state), _expr(node.right, state), state)
    if isinstance(node, ast.UnaryOp):
        value = _expr(node.operand, state)
        return (
            not value if isinstance(node.op, ast.Not) else -value if isinstance(node.op, ast.USub) else value
        )
    if isinstance(node, ast.BoolOp):
        values = [_expr(v, state) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in COMPARE:
        return COMPARE[type(node.ops[0])](_expr(node.left, state), _expr(node.comparators[0], state))
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_expr(e, state) for e in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.JoinedStr):
        return _sized("".join(_format(v, state) for v in node.values), state)
    if isinstance(node, ast.Subscript):
        try:
            return _expr(node.value, state)[_expr(node.slice, state)]
        except (IndexError, KeyError, TypeError):
            raise _fail(state, "IndexError", "index out of range") from None
    if isinstance(node, ast.Call):
        return _call(node, state)
    raise _unsupported(state, type(node).__name__)


def _format(node: ast.expr, state: _Run) -> str:
    if isinstance(node, ast.FormattedValue):
        spec = _expr(node.format_spec, state) if node.format_spec is not None else ""
        if not FORMAT_SPEC.fullmatch(str(spec)):
            raise _unsupported(state, f"the format spec {str(spec)[:20]!r}")
        try:
            return format(_expr(node.value, state), spec)
        except (TypeError, ValueError) as e:
            raise _fail(state, "ValueError", str(e)) from None
    return str(_expr(node, state))


def _call(node: ast.Call, state: _Run) -> Any:
    args = [_expr(a, state) for a in node.args]
    if isinstance(node.func, ast.Name) and node.func.id == "print":
        kw = {k.arg: _expr(k.value, state) for k in node.keywords}
        sep, end = str(kw.get("sep", " ")), str(kw.get("end", "\n"))
        state.out.append((sep.join(str(a) for a in args) + end).replace("\n", "\r\n"))
        return None
    if isinstance(node.func, ast.Name) and node.func.id == "range":
        r = range(*args)
        if len(r) > MAX_SIZE:
            raise _fail(state, "MemoryError", "memory allocation failed")
        return r
    if isinstance(node.func, ast.Name) and node.func.id in BUILTINS and not node.keywords:
        try:
            return _sized(BUILTINS[node.func.id](*args), state)
        except (TypeError, ValueError) as e:
            raise _fail(state, type(e).__name__, str(e)) from None
    if isinstance(node.func, ast.Attribute) and isinstance(_expr(node.func.value, state), _Module):
        if node.func.attr in NOOP_CALLS:
            return None
        if node.func.attr in ("ticks_ms", "ticks_us", "time"):
            return 0
    raise _unsupported(state, f"calling {ast.unparse(node.func)}()")
