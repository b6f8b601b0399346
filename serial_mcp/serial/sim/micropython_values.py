"""The values of ``sim://micropython`` scripts: operators, builtins and the board's limits.

A small board has a small heap, and the simulator runs inside the server, so every value and every
operation is bounded *before* the work is done: an integer holds at most ``MAX_INT_BITS`` bits (a
product, power or shift that would not fit is a ``MemoryError`` without being computed), a string
``MAX_SIZE`` characters, a list or tuple ``MAX_SIZE`` items and ``MAX_WEIGHT`` in all (what it would
print as, nested lists counted each time they appear, so ``a = [a, a]`` cannot double its way past
the bound). Each operation is one unit of ``Work`` (rendering or comparing a list costs its weight);
a script gets ``MAX_OPS`` units and ``TIME_BUDGET_S``, and stops at once when interrupted.

Type errors are worded as MicroPython words them (``unsupported types for __lt__: 'int', 'str'``),
so a script that mixes types gets the board's traceback, never a simulator crash.
"""

from __future__ import annotations

import math
import operator
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

MAX_OPS = 500_000  # units of work per script (expressions, items rendered or compared)
MAX_SIZE = 10_000  # longest string or list a script may build
MAX_WEIGHT = 100_000  # what a list or tuple may print as, nesting included
MAX_INT_BITS = 4096  # the largest integer, in bits
MAX_PRINTED = 256 * 1024  # characters of output per script
TIME_BUDGET_S = 5.0  # a backstop behind MAX_OPS: an op is at most microseconds, so this is seldom reached
WORD = 1 << 31  # a machine word on the RP2040: range() arguments must fit
CLOCK_EVERY = 1024  # units between two looks at the clock and the interrupt flag
TOO_MANY_STEPS = "sim://micropython: script ran too many steps"
PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-+ #0]*(\*|\d+)?(?:\.(\*|\d+))?")
SEQUENCES = (str, bytes, list, tuple)


class ScriptError(Exception):
    """A MicroPython exception raised by the script: its type name, message and line."""

    def __init__(self, kind: str, message: str, line: int) -> None:
        super().__init__(message)
        self.kind, self.message, self.line = kind, message, line


class Work:
    """The script's budget: units of work, output, time, and the host's Ctrl-C."""

    def __init__(self, interrupted: Callable[[], bool] | None = None) -> None:
        self.ops = 0
        self.printed = 0
        self.line = 1
        self._deadline = time.monotonic() + TIME_BUDGET_S
        self._next_look = CLOCK_EVERY
        self._interrupted = interrupted

    def fail(self, kind: str, message: str) -> ScriptError:
        return ScriptError(kind, message, self.line)

    def tick(self, units: int = 1) -> None:
        self.ops += units
        if self.ops > MAX_OPS:
            raise self.fail("RuntimeError", TOO_MANY_STEPS)
        if self.ops >= self._next_look:
            self._next_look = self.ops + CLOCK_EVERY
            self.look()

    def look(self) -> None:
        """Stop for Ctrl-C (``KeyboardInterrupt``, as a board does) or at the time budget."""
        if self._interrupted is not None and self._interrupted():
            raise self.fail("KeyboardInterrupt", "")
        if time.monotonic() > self._deadline:
            raise self.fail("RuntimeError", "sim://micropython: script ran too long")

    def no_memory(self, nbytes: float) -> ScriptError:
        return self.fail("MemoryError", f"memory allocation failed, allocating {math.ceil(nbytes)} bytes")

    def unsupported(self, what: str) -> ScriptError:
        return self.fail("NotImplementedError", f"sim://micropython does not simulate {what}")


@dataclass(frozen=True)
class Module:
    """An imported board module (``time``, ``machine`` …): only its no-op calls are simulated."""

    name: str


class SimList(list[Any]):
    """A script's list: its weight is known when it is made (the simulator never mutates one)."""

    weight = 0


class SimTuple(tuple[Any, ...]):
    weight = 0


def type_name(value: Any) -> str:
    if isinstance(value, SimList):
        return "list"
    if isinstance(value, SimTuple):
        return "tuple"
    if isinstance(value, Module):
        return "module"
    return type(value).__name__


def weight(value: Any) -> int:
    """What ``value`` prints as, about (a list's is kept with it, so this is O(1))."""
    if isinstance(value, (SimList, SimTuple)):
        return value.weight
    if isinstance(value, (str, bytes)):
        return len(value) + 3
    if isinstance(value, int):
        return value.bit_length() // 3 + 2
    if isinstance(value, (list, tuple)):  # not made by a script (none are): count it whole
        return 2 + sum(2 + weight(v) for v in value)
    return 24


def sequence(items: Iterable[Any], kind: type, work: Work) -> SimList | SimTuple:
    """A list or tuple of ``items``, refused when it would not fit the heap."""
    seq: SimList | SimTuple = SimList(items) if kind is list else SimTuple(items)
    if len(seq) > MAX_SIZE:
        raise work.no_memory(len(seq) * 4)
    work.tick(len(seq))
    seq.weight = 2 + sum(2 + weight(v) for v in seq)
    if seq.weight > MAX_WEIGHT:
        raise work.no_memory(seq.weight)
    return seq


def sized(value: Any, work: Work) -> Any:
    """``value`` if it fits the board's heap (lists become ``SimList`` with their weight)."""
    if isinstance(value, (str, bytes)) and len(value) > MAX_SIZE:
        raise work.no_memory(len(value))
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise work.no_memory(value.bit_length() / 8)
    if isinstance(value, (list, tuple)) and not isinstance(value, (SimList, SimTuple)):
        return sequence(value, list if isinstance(value, list) else tuple, work)
    return value


def render(value: Any, work: Work) -> str:
    """``str(value)``, paid for by its weight."""
    work.tick(weight(value) // 8)
    return str(value)


def _bits(bits: float, work: Work) -> None:
    if bits > MAX_INT_BITS:
        raise work.no_memory(bits / 8)


BINOPS: dict[str, tuple[str, Callable[[Any, Any], Any]]] = {
    "Add": ("__add__", operator.add),
    "Sub": ("__sub__", operator.sub),
    "Mult": ("__mul__", operator.mul),
    "Div": ("__truediv__", operator.truediv),
    "FloorDiv": ("__floordiv__", operator.floordiv),
    "Mod": ("__mod__", operator.mod),
    "Pow": ("__pow__", operator.pow),
    "LShift": ("__lshift__", operator.lshift),
    "RShift": ("__rshift__", operator.rshift),
    "BitAnd": ("__and__", operator.and_),
    "BitOr": ("__or__", operator.or_),
    "BitXor": ("__xor__", operator.xor),
}


def _afford(op: str, a: Any, b: Any, work: Work) -> None:
    """Refuse, before computing it, a result the heap could not hold."""
    if op == "Mult":
        seq, n = (a, b) if isinstance(b, int) else (b, a)
        if isinstance(seq, SEQUENCES) and isinstance(n, int):
            if n > 0 and len(seq) * n > MAX_SIZE:
                raise work.no_memory(len(seq) * n)
            if n > 0 and isinstance(seq, (list, tuple)) and weight(seq) * n > MAX_WEIGHT:
                raise work.no_memory(weight(seq) * n)
        elif isinstance(a, int) and isinstance(b, int):
            _bits(a.bit_length() + b.bit_length(), work)
    elif op == "Pow" and isinstance(a, int) and isinstance(b, int) and b > 0 and abs(a) > 1:
        _bits(b * math.log2(abs(a)), work)
    elif op == "LShift" and isinstance(a, int) and isinstance(b, int) and a and b > 0:
        _bits(a.bit_length() + b, work)
    elif op == "Mod" and isinstance(a, str):
        for spec in PERCENT_SPEC.finditer(a):
            for part in spec.groups():
                if part == "*" or (part is not None and len(part) > 3):
                    raise work.unsupported(f"the format width {part[:20]!r}")
        work.tick(weight(b) // 8)


def binop(op: str, a: Any, b: Any, work: Work) -> Any:
    entry = BINOPS.get(op)
    if entry is None:
        raise work.unsupported(op)
    name, fn = entry
    work.tick()
    _afford(op, a, b, work)
    try:
        result = fn(a, b)
    except ZeroDivisionError:
        raise work.fail("ZeroDivisionError", "divide by zero") from None
    except OverflowError as exc:
        if op == "Pow" and isinstance(a, (int, float)) and isinstance(b, (int, float)):
            return _float_pow_limit(a, b)
        raise work.fail("OverflowError", str(exc)) from None
    except TypeError as exc:
        if op == "Mod" and isinstance(a, str):
            raise work.fail("TypeError", str(exc)) from None
        raise work.fail(
            "TypeError", f"unsupported types for {name}: '{type_name(a)}', '{type_name(b)}'"
        ) from None
    except ValueError as exc:  # a negative shift count
        raise work.fail("ValueError", str(exc)) from None
    return sized(result, work)


def _float_pow_limit(a: float, b: float) -> float:
    """What a board's float ``a ** b`` gives where CPython overflows: inf, or 0.0 for a huge base
    to a negative power (a board's float of a huge int is inf), with the sign of an odd power."""
    huge = (abs(a) > 1) == (b > 0)
    odd = float(b).is_integer() and int(b) % 2 == 1
    magnitude = math.inf if huge else 0.0
    return -magnitude if a < 0 and odd else magnitude


UNARY: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "USub": ("__neg__", operator.neg),
    "UAdd": ("__pos__", operator.pos),
    "Invert": ("__invert__", operator.invert),
}


def unary(op: str, value: Any, work: Work) -> Any:
    work.tick()
    if op == "Not":
        return not value
    name, fn = UNARY[op]
    numeric = isinstance(value, int) if op == "Invert" else isinstance(value, (int, float, complex))
    if not numeric:
        raise work.fail("TypeError", f"unsupported type for {name}: '{type_name(value)}'")
    return fn(value)


COMPARE: dict[str, tuple[str, Callable[[Any, Any], Any]]] = {
    "Eq": ("__eq__", operator.eq),
    "NotEq": ("__ne__", operator.ne),
    "Lt": ("__lt__", operator.lt),
    "LtE": ("__le__", operator.le),
    "Gt": ("__gt__", operator.gt),
    "GtE": ("__ge__", operator.ge),
    "In": ("__contains__", lambda a, b: a in b),
    "NotIn": ("__contains__", lambda a, b: a not in b),
}


def compare(op: str, a: Any, b: Any, work: Work) -> Any:
    name, fn = COMPARE[op]
    work.tick(1 + (weight(a) + weight(b)) // 8)
    try:
        return fn(a, b)
    except TypeError:
        if op in ("In", "NotIn"):
            if not isinstance(b, (*SEQUENCES, range)):
                raise work.fail("TypeError", f"'{type_name(b)}' object isn't iterable") from None
            raise work.fail(
                "TypeError", f"can't convert '{type_name(a)}' object to {type_name(b)} implicitly"
            ) from None
        raise work.fail(
            "TypeError", f"unsupported types for {name}: '{type_name(a)}', '{type_name(b)}'"
        ) from None


def make_range(args: list[Any], work: Work) -> range:
    if not args:
        raise work.fail("TypeError", "function missing 1 required positional arguments")
    if len(args) > 3:
        raise work.fail("TypeError", f"function expected at most 3 arguments, got {len(args)}")
    for arg in args:
        if not isinstance(arg, int):
            raise work.fail("TypeError", f"can't convert {type_name(arg)} to int")
        if not -WORD <= arg < WORD:
            raise work.fail("OverflowError", "overflow converting long int to machine word")
    if len(args) == 3 and args[2] == 0:
        raise work.fail("ValueError", "zero step")
    r = range(*args)
    if len(r) > MAX_SIZE:
        raise work.no_memory(len(r) * 4)
    return r


def iterable(value: Any, work: Work) -> list[Any]:
    if isinstance(value, (range, *SEQUENCES)) and len(value) <= MAX_SIZE:
        work.tick(len(value) // 8)
        return list(value)
    if isinstance(value, (range, *SEQUENCES)):
        raise work.no_memory(len(value) * 4)
    raise work.fail("TypeError", f"'{type_name(value)}' object isn't iterable")


def _to_int(value: Any = 0, *base: Any) -> int:
    if isinstance(value, float) and math.isinf(value):
        raise OverflowError("can't convert inf to int")
    if isinstance(value, float) and math.isnan(value):
        raise ValueError("can't convert NaN to int")
    return int(value, *base)


def call_builtin(name: str, args: list[Any], work: Work) -> Any:
    """A builtin, bounded like every operation (``sum`` adds one item at a time)."""
    work.tick()
    try:
        if name == "sum":
            if not 1 <= len(args) <= 2:
                raise TypeError(f"sum expected 1 or 2 arguments, got {len(args)}")
            total = args[1] if len(args) == 2 else 0
            for item in iterable(args[0], work):
                total = binop("Add", total, item, work)
            return total
        if name == "round" and len(args) == 2 and isinstance(args[0], int):
            digits = args[1]
            if isinstance(digits, int) and digits < 0:
                _bits(-digits * math.log2(10), work)  # the board computes 10 ** -ndigits
        if name in ("str", "min", "max"):
            work.tick(sum(weight(a) for a in args) // 8)
        return sized(BUILTINS[name](*args), work)
    except (TypeError, ValueError, OverflowError, ZeroDivisionError) as exc:
        raise work.fail(type(exc).__name__, str(exc)) from None


BUILTINS: dict[str, Callable[..., Any]] = {
    "len": len,
    "str": str,
    "int": _to_int,
    "float": float,
    "abs": abs,
    "min": min,
    "max": max,
    "hex": hex,
    "round": round,
    "bool": bool,
}
BUILTIN_NAMES = frozenset({*BUILTINS, "sum"})
