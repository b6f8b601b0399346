"""Transition tables for the XMODEM/YMODEM machines, in the manner of h11: what a machine does
with an input is data, a mapping ``(state, input) -> entry``, not an ``if state == ...`` chain.

An entry is one of three things, so every pair is accounted for:

* :class:`Rule`: run ``action`` and move to the state it returns, which must be one of the
  states the rule names in ``then`` (an action picks among them on the machine's counters,
  e.g. "next block" or "EOT"); ``purge`` drops what else arrived in the same chunk.
* :class:`Ignore`: the input changes nothing here (line noise, a stale reply), and ``why`` says so.
* :class:`Refuse`: the input cannot happen in this state; if it does, the transfer ends with a
  protocol error instead of falling through.

:func:`check_table` verifies that a table covers every pair and that each rule's targets are
states of the machine; the machines call it once when their module is imported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Generic, TypeVar

from serial_mcp.core.xmodem_wire import Event

M = TypeVar("M")  # the machine
S = TypeVar("S", bound=Enum)  # its states


@dataclass(frozen=True, slots=True)
class Rule(Generic[M, S]):
    """A transition: ``action(machine, events)`` does the work and returns one of ``then``."""

    action: Callable[[M, list[Event]], S]
    then: frozenset[S]
    purge: bool = False


@dataclass(frozen=True, slots=True)
class Ignore:
    """The input leaves the state and the counters as they are."""

    why: str


@dataclass(frozen=True, slots=True)
class Refuse:
    """The input is impossible in this state: reaching it is a protocol error."""

    why: str


Entry = Rule[M, S] | Ignore | Refuse
Table = Mapping[tuple[Enum, Enum], Entry[M, S]]  # (state, input) -> entry


def check_table(table: Table[M, S], states: Iterable[S], inputs: Iterable[Enum]) -> None:
    """Raise ValueError unless ``table`` has exactly one entry for every (state, input) pair and
    every rule leads to known states."""
    states = list(states)
    pairs = {(s, i) for s in states for i in inputs}
    missing = pairs - set(table)
    extra = set(table) - pairs
    if missing or extra:
        raise ValueError(
            f"transition table: missing {sorted(map(str, missing))}, extra {sorted(map(str, extra))}"
        )
    for pair, entry in table.items():
        if isinstance(entry, Rule) and (not entry.then or not entry.then <= set(states)):
            raise ValueError(f"transition table: {pair} leads to unknown states {entry.then}")
