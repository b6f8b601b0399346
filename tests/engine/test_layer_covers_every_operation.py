"""Every operation of the table has a behaviour test at the engine level: a new operation fails
this until a test in tests/engine calls it through ``Engine`` / ``EngineConnection``."""

from __future__ import annotations

import ast
from pathlib import Path

from serial_mcp.engine.operations import OPERATIONS

HERE = Path(__file__).resolve().parent


def _methods_called() -> set[str]:
    called: set[str] = set()
    for path in HERE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                called.add(node.func.attr)
    return called


def test_every_operation_is_driven_through_the_engine_here() -> None:
    missing = sorted({op.name for op in OPERATIONS} - _methods_called())
    assert not missing, f"operations with no engine-level behaviour test in tests/engine: {missing}"
