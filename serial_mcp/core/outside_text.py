"""Text from outside serial-mcp, made safe to quote in a label or a message a model reads.

A program name (``/proc/PID/cmdline``), a file name, a name a device reports: whoever names a
process or a file chooses these bytes, so they may carry control characters (a terminal's escape
sequences, a newline that starts a fake line of the result) or a paragraph of instructions. Quoted
text is stripped of control and format characters (Unicode categories C*, and the line and
paragraph separators), its runs of white space made one space, capped at ``cap`` characters (an
ellipsis marks the cut), and given as a JSON string literal, in double quotes, after the name of
the field it fills (``program "esptool"``) — never as free-running prose. Data a read returns is
not text from outside in this sense: it is never filtered.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Final

NAME_CAP: Final = 64  # printable characters kept of a program or file name
_ELLIPSIS: Final = "…"


def clean(text: str, cap: int = NAME_CAP) -> str:
    """``text`` without control or format characters, white space runs as one space, at most
    ``cap`` characters (the last one an ellipsis when it was cut)."""
    kept: list[str] = []
    space = False
    for ch in text:
        cat = unicodedata.category(ch)
        if ch.isspace() or cat in ("Zl", "Zp"):
            space = bool(kept)
            continue
        if cat.startswith("C"):
            continue
        if space:
            kept.append(" ")
            space = False
        kept.append(ch)
        if len(kept) > cap:
            return "".join(kept[: cap - 1]) + _ELLIPSIS
    return "".join(kept)


def quoted(text: str, cap: int = NAME_CAP) -> str:
    """``clean(text)`` as a double-quoted string literal (quotes and backslashes escaped)."""
    return json.dumps(clean(text, cap), ensure_ascii=False)
