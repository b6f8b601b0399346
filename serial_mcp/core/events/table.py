"""The signature table compiled for the detector: its rows (with a user's own boot patterns after
every built-in banner), the rows each trigger literal points to, and the prefilter that finds the
triggers of every row (and a user's patterns) in a chunk (see :mod:`.detector` and :mod:`.prefilter`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final, NamedTuple

from serial_mcp import messages
from serial_mcp.core.events.block import Row, rows_of
from serial_mcp.core.events.prefilter import Prefilter
from serial_mcp.core.events.signatures import Signature
from serial_mcp.core.match import compile_re2
from serial_mcp.errors import InvalidArgument

USER_BOOT_RANK: Final = 60  # a user's boot pattern ranks after every built-in banner


class CompiledTable(NamedTuple):
    rows: tuple[Row, ...]
    user_rows: tuple[Row, ...]  # rows of a user's boot patterns (matched on raw bytes)
    by_trigger: dict[bytes, tuple[Row, ...]]  # trigger literal -> the rows it may start
    trigger: Prefilter  # finds every trigger literal and user pattern
    hints: bool  # the prefilter's hits say which trigger a line holds (see below)


def compile_table(signatures: tuple[Signature, ...], boot_patterns: Sequence[bytes]) -> CompiledTable:
    """Compile ``signatures`` plus a user's ``boot_patterns`` (RE2, size-bounded: a table too big for
    RE2's budget is ``invalid_argument`` on ``boot_patterns``)."""
    rows = list(rows_of(tuple(signatures)))
    for i, pattern in enumerate(boot_patterns):
        user = compile_re2(pattern, f"boot_patterns[{i}]", multiline=False)
        sig = Signature(f"user_boot_{i}", "user", "boot", "info", (), r"\A", rank=USER_BOOT_RANK)
        rows.append(Row(sig, raw_head=user))
    rows_t = tuple(rows)
    user_rows = tuple(row for row in rows if row.raw is not None)
    by_trigger: dict[bytes, list[Row]] = {}
    for row in rows:
        for trigger in row.sig.triggers:
            by_trigger.setdefault(trigger, []).append(row)
    table = {k: tuple(v) for k, v in by_trigger.items()}
    # Where the prefilter's search over a region found a trigger says which trigger a line holds, so
    # the line need not be searched again. A user's pattern may match differently inside its line
    # (``$`` before a CR), and a trigger holding a line end spans lines: then every line is searched.
    hints = not boot_patterns and not any(b"\r" in k or b"\n" in k for k in by_trigger)
    try:
        literals = [trigger for row in rows for trigger in row.sig.triggers]
        prefilter = Prefilter(list(dict.fromkeys(literals)), boot_patterns, field="boot_patterns")
    except InvalidArgument as exc:  # only a user's patterns can push the prefilter over RE2's budget
        raise InvalidArgument(
            messages.EVENTS_BOOT_PATTERNS_TOO_BIG.format(error=exc), field="boot_patterns"
        ) from None
    return CompiledTable(rows_t, user_rows, table, prefilter, hints)


def find_head(
    table: CompiledTable, raw: bytes, text: str, hint: tuple[int, int]
) -> tuple[Row, re.Match[str] | None] | None:
    """The row whose head the line ``raw`` (``text`` cleaned) is, trying the rows of the leftmost trigger
    first; ``hint`` is where that trigger is in ``raw``."""
    search = table.trigger.search
    at, to = hint
    tried: set[str] = set()
    for _ in range(4):  # the rows of the first few triggers found, in the order they are met
        for row in table.by_trigger.get(raw[at:to], table.user_rows):
            if row.name not in tried:
                tried.add(row.name)
                found = _try(row, raw, text)
                if found is not None:
                    return found
        m = search(raw, at + 1)
        if m is None:
            return None
        at, to = m
    for row in table.rows:  # a line with many triggers: the remaining rows, each once
        if row.name not in tried and (row.raw is not None or any(t in raw for t in row.sig.triggers)):
            found = _try(row, raw, text)
            if found is not None:
                return found
    return None


def _try(row: Row, raw: bytes, text: str) -> tuple[Row, re.Match[str] | None] | None:
    if row.raw is not None:
        return (row, None) if row.raw.search(raw) is not None else None
    m = row.head.search(text)
    return (row, m) if m is not None else None
