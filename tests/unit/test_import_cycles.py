"""No import circle in the package (issue 41.3): grimp's import graph (function-level imports included,
``if TYPE_CHECKING:`` imports left out: they never run) has no strongly connected component of more
than one module."""

from __future__ import annotations

from typing import Protocol

import pytest

grimp = pytest.importorskip("grimp")  # installed with import-linter (the test extra)


class Graph(Protocol):
    """What the cycle finder reads of a grimp graph."""

    @property
    def modules(self) -> set[str]: ...

    def find_modules_directly_imported_by(self, module: str) -> set[str]: ...


def import_cycles(graph: Graph) -> list[frozenset[str]]:
    """Every strongly connected component of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.find_modules_directly_imported_by(target)))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def test_the_cycle_finder_finds_a_circle() -> None:
    class Fake:
        def __init__(self) -> None:
            self.modules = {"a", "b", "c", "d"}
            self.edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}

        def find_modules_directly_imported_by(self, module: str) -> set[str]:
            return self.edges.get(module, set())

    assert import_cycles(Fake()) == [frozenset({"a", "b", "c"})]


def test_no_import_cycle() -> None:
    graph = grimp.build_graph("serial_mcp", cache_dir=None, exclude_type_checking_imports=True)
    cycles = import_cycles(graph)
    listed = "\n".join(" <-> ".join(sorted(c)) for c in cycles)
    assert not cycles, f"import circles in serial_mcp:\n{listed}"


def test_no_type_only_import_cycle() -> None:
    """Imports under ``if TYPE_CHECKING:`` make no circle either (a part names what it needs of its
    owner as a Protocol: ``serial.event_text.Watched``)."""
    graph = grimp.build_graph("serial_mcp", cache_dir=None)
    cycles = import_cycles(graph)
    listed = "\n".join(" <-> ".join(sorted(c)) for c in cycles)
    assert not cycles, f"import circles through TYPE_CHECKING imports:\n{listed}"
