"""Issue 27.1: ``force`` (write over a port lent to another program) is declared once, on ``Forcing``: every
option class that has it inherits it, none spells it out again, so a new writing operation gets the same
type, default and schema text by inheriting, and cannot declare a different one."""

from __future__ import annotations

import dataclasses
import inspect

from serial_mcp.engine import options
from serial_mcp.engine.options import Forcing, NoOptions


def _option_classes() -> list[type]:
    return [
        c
        for _, c in inspect.getmembers(options, inspect.isclass)
        if issubclass(c, NoOptions) and c.__module__ == options.__name__
    ]


def test_every_class_with_force_inherits_it_from_forcing_and_none_redeclares_it() -> None:
    with_force = [c for c in _option_classes() if "force" in {f.name for f in dataclasses.fields(c)}]
    assert len(with_force) >= 11  # Forcing and the ten writing operations
    for cls in with_force:
        assert issubclass(cls, Forcing), cls.__name__
        if cls is not Forcing:
            assert "force" not in inspect.get_annotations(cls), f"{cls.__name__} redeclares force"


def test_the_writing_operations_are_forcing() -> None:
    writing = ("Write", "Transact", "CaptureBoot", "Flush", "Reconfigure", "Lines", "Break", "Flow", "DetectBaud")
    for name in (*writing, "Transfer"):
        assert issubclass(getattr(options, f"{name}Options"), Forcing), name
