"""messages.py is the one place for user-facing text: no name defined twice (a later definition would
silently replace an earlier one), and every name the package uses exists."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[2] / "serial_mcp"


def defined() -> list[str]:
    tree = ast.parse((PACKAGE / "messages.py").read_text())
    return [
        t.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    ]


def test_no_message_is_defined_twice() -> None:
    dupes = [name for name, n in Counter(defined()).items() if n > 1]
    assert dupes == []


def test_every_used_message_exists_and_is_used() -> None:
    used: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        if path.name != "messages.py":
            used |= set(re.findall(r"messages\.([A-Z_0-9]+)", path.read_text()))
    names = set(defined())
    assert sorted(used - names) == []
    assert sorted(names - used) == []


@pytest.mark.slow
def test_messages_shown_as_they_are_have_no_escaped_braces() -> None:
    """``{{`` is only right in a template that goes through ``str.format``; shown raw, it is a typo."""
    from serial_mcp import messages

    sources = [p.read_text() for p in PACKAGE.rglob("*.py") if p.name != "messages.py"]
    for name in defined():
        text = getattr(messages, name)
        formatted = any(re.search(rf"messages\.{name}\.format\(", s) for s in sources)
        if not formatted:
            assert "{{" not in text, name
