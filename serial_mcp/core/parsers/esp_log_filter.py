"""esp-idf-monitor's ``--print_filter``: which ESP-IDF log lines to show (sans-IO).

The syntax is esp-idf-monitor's: space-separated ``tag:level`` items, ``*`` for every tag,
levels ``N`` (none), ``E``, ``W``, ``I``, ``D``, ``V`` (or ``*``, or nothing: verbose), case-insensitive;
a bare ``tag`` means ``tag:V``; a later item for the same tag wins; an empty filter shows
everything. A line shows when its tag's level (else ``*``'s, else ``N``) is at least the line's
level; a line that is not an ESP-IDF log line shows when ``*`` is above ``N``.

Which lines count as log lines, and what their tag is, follows esp-idf-monitor's ``LineMatcher``
exactly (one optional colour escape at the very start, the level letter, an optional
parenthesised timestamp, a tag up to the first ``:``), so the same filter picks the same lines
here as in esp-idf-monitor (``tests/unit/test_esp_log.py`` checks it against ``LineMatcher``).
"""

from __future__ import annotations

import re
from typing import Final

from serial_mcp import messages
from serial_mcp.errors import InvalidArgument

#: Log levels by letter, least verbose first (``N`` only in filters: no line has it).
LEVELS: Final = {"N": 0, "E": 1, "W": 2, "I": 3, "D": 4, "V": 5}
_FILTER_LEVELS: Final = {**LEVELS, "*": 5, "": 5}
_VERBOSE: Final = LEVELS["V"]
_NONE: Final = LEVELS["N"]
# esp-idf-monitor's LineMatcher pattern, unchanged: what it takes for a log line and its tag.
_LOG_LINE: Final = re.compile(r"^(?:\033\[[01];?\d+m?)?([EWIDV]) (?:\([^)]+\) )?([^:]+): ")


def line_text(line: bytes) -> str:
    """A line as esp-idf-monitor matches it: UTF-8, or (bad UTF-8) stripped with bad bytes left out."""
    try:
        return line.decode()
    except UnicodeDecodeError:
        return line.strip().decode(errors="ignore")


class PrintFilter:
    """One ``print_filter``; :meth:`shows` says whether a line passes it."""

    __slots__ = ("_default", "_levels", "spec")

    def __init__(self, spec: str, *, field: str = "print_filter") -> None:
        self.spec = spec
        levels: dict[str, int] = {}
        items = spec.split()
        if not items:
            levels["*"] = _VERBOSE
        for item in items:
            parts = item.split(":")
            if len(parts) > 2:
                raise InvalidArgument(messages.ESP_FILTER_COLONS.format(item=item), field=field)
            level = _VERBOSE
            if len(parts) == 2:
                if not parts[0]:
                    raise InvalidArgument(messages.ESP_FILTER_NO_TAG.format(item=item), field=field)
                found = _FILTER_LEVELS.get(parts[1].upper())
                if found is None:
                    raise InvalidArgument(
                        messages.ESP_FILTER_LEVEL.format(item=item, level=parts[1]), field=field
                    )
                level = found
            levels[parts[0]] = level
        self._levels = levels
        self._default = levels.get("*", _NONE)

    def shows(self, line: bytes) -> bool:
        """Whether esp-idf-monitor would print ``line`` (with or without its line ending)."""
        m = _LOG_LINE.search(line_text(line))
        if m is None:
            return self._default > _NONE
        return self._levels.get(m.group(2), self._default) >= LEVELS[m.group(1)]
