"""Backslash escapes in command-line data: ``'AT\\r'`` on a shell means the bytes ``AT`` + CR.

A shell passes ``\\r`` through as two characters, so ``serial-mcp send`` turns the usual C escapes
into bytes: ``\\r \\n \\t \\0 \\a \\b \\f \\v \\e`` (ESC), ``\\\\`` and ``\\xHH`` (any byte). Anything
else after a backslash is refused rather than guessed, so a typo never sends the wrong bytes.
Text between escapes is sent as UTF-8 (bytes the shell could not decode are kept as they were).
"""

from __future__ import annotations

from typing import Final

from serial_mcp import messages
from serial_mcp.errors import InvalidArgument

SIMPLE: Final[dict[str, int]] = {
    "r": 0x0D,
    "n": 0x0A,
    "t": 0x09,
    "0": 0x00,
    "a": 0x07,
    "b": 0x08,
    "f": 0x0C,
    "v": 0x0B,
    "e": 0x1B,
    "\\": 0x5C,
}
_HEX: Final = frozenset("0123456789abcdefABCDEF")


def unescape(text: str) -> bytes:
    """The bytes ``text`` denotes; ``InvalidArgument`` naming the bad escape and where it is."""
    out = bytearray()
    i = 0
    while i < len(text):
        backslash = text.find("\\", i)
        if backslash < 0:
            out += text[i:].encode("utf-8", errors="surrogateescape")
            break
        out += text[i:backslash].encode("utf-8", errors="surrogateescape")
        kind = text[backslash + 1 : backslash + 2]
        if kind in SIMPLE:
            out.append(SIMPLE[kind])
            i = backslash + 2
        elif kind == "x" and len(digits := text[backslash + 2 : backslash + 4]) == 2 and set(digits) <= _HEX:
            out.append(int(digits, 16))
            i = backslash + 4
        else:
            shown = text[backslash : backslash + 4] if kind == "x" else text[backslash : backslash + 2]
            raise InvalidArgument(messages.ESCAPE_BAD.format(escape=shown, pos=backslash))
    return bytes(out)
