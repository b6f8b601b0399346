"""The script runner behind ``sim://micropython``: a tiny, safe subset of Python, with MicroPython's output.

It walks the parsed tree itself (no ``eval``/``exec``): ``print``, assignment (``=``, ``+=`` …), ``for``
over a list/``range``, ``if``/``elif``/``else``, ``pass``, ``import`` of board modules, ``time.sleep*``
(no-ops), ``raise``, and expressions over numbers, strings, lists, f-strings and a few builtins. Anything
else raises ``NotImplementedError`` naming the simulation's limit. Errors come back as MicroPython prints
them (``Traceback (most recent call last):`` / ``  File "<stdin>", line N, in <module>`` / ``ValueError:
msg``), with ``\\r\\n`` line endings as on a UART. Work is bounded (statements, units of work, sizes,
integer bits, output, time: ``micropython_values``) so a script cannot hang or exhaust the server,
and any error it makes is a traceback, never a simulator crash.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from serial_mcp.serial.sim import micropython_values as v
from serial_mcp.serial.sim.micropython_values import ScriptError, Work

MAX_STEPS = 10_000  # statements per script
FORMAT_SPEC = re.compile(r"[<>^=+\- #0]{0,3}\d{0,3}(?:\.\d{1,2})?[bcdeEfFgGnosxX%]?")
MODULES = frozenset({"time", "machine", "sys", "os", "gc", "micropython", "utime"})
NOOP_CALLS = frozenset({"sleep", "sleep_ms", "sleep_us", "collect"})
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


@dataclass
class Result:
    stdout: str = ""
    stderr: str = ""
    value: Any = None  # the last expression statement's value (the friendly REPL prints it)


class _Run(Work):
    def __init__(self, interrupted: Callable[[], bool] | None) -> None:
        super().__init__(interrupted)
        self.names: dict[str, Any] = {}
        self.out: list[str] = []
        self.steps = 0
        self.value: Any = None

    def print(self, text: str) -> None:
        self.printed += len(text)
        if self.printed > v.MAX_PRINTED:
            raise self.fail("RuntimeError", "sim://micropython: script printed too much")
        self.out.append(text)


def run(source: str, interrupted: Callable[[], bool] | None = None) -> Result:
    """Run ``source``; stdout and stderr as the board prints them. ``interrupted`` is the host's
    Ctrl-C, looked at as the script runs."""
    try:
        tree = ast.parse(source.replace("\r\n", "\n").replace("\r", "\n"), "<stdin>")
    except SyntaxError as e:
        return Result(stderr=traceback("SyntaxError", "invalid syntax", e.lineno or 1, in_module=False))
    except (RecursionError, MemoryError, ValueError):
        return Result(stderr=traceback("MemoryError", "memory allocation failed", 1))
    state = _Run(interrupted)
    try:
        _block(tree.body, state)
    except ScriptError as e:
        return Result("".join(state.out), traceback(e.kind, e.message, e.line))
    except RecursionError:
        return Result(
            "".join(state.out), traceback("RuntimeError", "maximum recursion depth exceeded", state.line)
        )
    except (ArithmeticError, LookupError, TypeError, ValueError, MemoryError) as e:
        # an error no rule words the board's way is still the script's error, never the simulator's
        return Result("".join(state.out), traceback(type(e).__name__, str(e), state.line))
    return Result("".join(state.out), "", state.value)


def traceback(kind: str, message: str, line: int, *, in_module: bool = True) -> str:
    where = f'  File "<stdin>", line {line}' + (", in <module>" if in_module else "")
    return f"Traceback (most recent call last):\r\n{where}\r\n{kind}: {message}\r\n"


def _block(body: list[ast.stmt], state: _Run) -> None:
    for stmt in body:
        state.steps += 1
        state.line = stmt.lineno
        if state.steps > MAX_STEPS:
            raise state.fail("RuntimeError", v.TOO_MANY_STEPS)
        state.look()
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
        state.names[stmt.target.id] = v.binop(
            type(stmt.op).__name__, _name(stmt.target.id, state), _expr(stmt.value, state), state
        )
    elif isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name) and not stmt.orelse:
        for item in v.iterable(_expr(stmt.iter, state), state):
            state.names[stmt.target.id] = item
            _block(stmt.body, state)
    elif isinstance(stmt, ast.If):
        _block(stmt.body if _expr(stmt.test, state) else stmt.orelse, state)
    elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
        for alias in stmt.names:
            module = stmt.module if isinstance(stmt, ast.ImportFrom) else alias.name
            if (module or "").split(".")[0] not in MODULES:
                raise state.fail("ImportError", f"no module named '{module}'")
            state.names[alias.asname or alias.name] = v.Module(alias.name)
    elif isinstance(stmt, ast.Raise) and stmt.exc is not None:
        raise _raised(stmt.exc, state)
    elif not isinstance(stmt, ast.Pass):
        raise state.unsupported(type(stmt).__name__)


def _raised(exc: ast.expr, state: _Run) -> ScriptError:
    call = exc if isinstance(exc, ast.Call) else None
    name = call.func if call is not None else exc
    if not isinstance(name, ast.Name) or name.id not in EXCEPTIONS:
        return state.fail("TypeError", "exceptions must derive from BaseException")
    args = [_expr(a, state) for a in call.args] if call is not None else []
    return state.fail(name.id, v.render(args[0], state) if args else "")


def _name(name: str, state: _Run) -> Any:
    if name in state.names:
        return state.names[name]
    if name in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[name]
    raise state.fail("NameError", f"name '{name}' isn't defined")


def _expr(node: ast.expr, state: _Run) -> Any:
    state.tick()
    if isinstance(node, ast.Constant):  # a string literal is bounded by the code's size
        return v.sized(node.value, state) if isinstance(node.value, int) else node.value
    if isinstance(node, ast.Name):
        return _name(node.id, state)
    if isinstance(node, ast.BinOp):
        return v.binop(type(node.op).__name__, _expr(node.left, state), _expr(node.right, state), state)
    if isinstance(node, ast.UnaryOp):
        return v.unary(type(node.op).__name__, _expr(node.operand, state), state)
    if isinstance(node, ast.BoolOp):
        value: Any = None
        for part in node.values:  # short-circuit, and the deciding value, as Python does
            value = _expr(part, state)
            if bool(value) is isinstance(node.op, ast.Or):
                return value
        return value
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]).__name__ in v.COMPARE:
        left = _expr(node.left, state)
        return v.compare(type(node.ops[0]).__name__, left, _expr(node.comparators[0], state), state)
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_expr(e, state) for e in node.elts]
        return v.sequence(items, list if isinstance(node, ast.List) else tuple, state)
    if isinstance(node, ast.JoinedStr):
        return v.sized("".join(_format(part, state) for part in node.values), state)
    if isinstance(node, ast.Subscript):
        return _subscript(_expr(node.value, state), _expr(node.slice, state), state)
    if isinstance(node, ast.Call):
        return _call(node, state)
    raise state.unsupported(type(node).__name__)


def _subscript(value: Any, index: Any, state: _Run) -> Any:
    if not isinstance(value, (range, *v.SEQUENCES)):
        raise state.fail("TypeError", f"'{v.type_name(value)}' object isn't subscriptable")
    kind = "string" if isinstance(value, str) else v.type_name(value)
    if not isinstance(index, int):
        raise state.fail("TypeError", f"{kind} indices must be integers, not {v.type_name(index)}")
    try:
        return value[index]
    except (IndexError, OverflowError):
        raise state.fail("IndexError", f"{kind} index out of range") from None


def _format(node: ast.expr, state: _Run) -> str:
    if isinstance(node, ast.FormattedValue):
        spec = _expr(node.format_spec, state) if node.format_spec is not None else ""
        if not FORMAT_SPEC.fullmatch(str(spec)):
            raise state.unsupported(f"the format spec {str(spec)[:20]!r}")
        value = _expr(node.value, state)
        state.tick(v.weight(value) // 8)
        try:
            return format(value, spec)
        except (TypeError, ValueError, OverflowError) as e:
            raise state.fail("ValueError", str(e)) from None
    return v.render(_expr(node, state), state)


def _call(node: ast.Call, state: _Run) -> Any:
    args = [_expr(a, state) for a in node.args]
    if isinstance(node.func, ast.Name) and node.func.id == "print":
        kw = {k.arg: _expr(k.value, state) for k in node.keywords}
        sep, end = v.render(kw.get("sep", " "), state), v.render(kw.get("end", "\n"), state)
        state.print((sep.join(v.render(a, state) for a in args) + end).replace("\n", "\r\n"))
        return None
    if isinstance(node.func, ast.Name) and node.func.id == "range":
        return v.make_range(args, state)
    if isinstance(node.func, ast.Name) and node.func.id in v.BUILTIN_NAMES and not node.keywords:
        return v.call_builtin(node.func.id, args, state)
    if isinstance(node.func, ast.Attribute) and isinstance(_expr(node.func.value, state), v.Module):
        if node.func.attr in NOOP_CALLS:
            return None
        if node.func.attr in ("ticks_ms", "ticks_us", "time"):
            return 0
    raise state.unsupported(f"calling {ast.unparse(node.func)}()")
