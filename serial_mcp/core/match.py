"""Pattern matching over a growing RX window: literal, regex or glob, found across chunk splits.

A read searches the bytes it has gathered so far each time more arrive. Literal search resumes
where it stopped (keeping ``len(pattern) - 1`` bytes of overlap), so a pattern torn across two
chunks is still found and a flood is not rescanned from the start.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from serial_mcp import messages
from serial_mcp.core.encoding import decode_input
from serial_mcp.errors import InvalidArgument

MatchMode = Literal["literal", "regex", "glob"]
MATCH_MODES: tuple[MatchMode, ...] = ("literal", "regex", "glob")
MATCH_KEYS = ("pattern", "mode", "pattern_encoding")


@dataclass(frozen=True, slots=True)
class Span:
    """Where a match sits in the searched window: ``window[start:end]``."""

    start: int
    end: int


def glob_to_regex(pattern: bytes) -> bytes:
    """Glob to unanchored regex: ``*`` any run within a line, ``?`` one byte, ``[..]`` a class."""
    out = bytearray()
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i : i + 1]
        i += 1
        if c == b"*":
            out += rb"[^\n]*?"
        elif c == b"?":
            out += rb"[^\n]"
        elif c == b"[":
            j = pattern.find(b"]", i + 1 if pattern[i : i + 1] in (b"!", b"]") else i)
            if j < 0:
                out += rb"\["
                continue
            body = pattern[i:j]
            i = j + 1
            if body.startswith(b"!"):
                body = b"^" + body[1:]
            out += b"[" + body.replace(b"\\", b"\\\\") + b"]"
        else:
            out += re.escape(c)
    return bytes(out)


class Matcher:
    """A compiled match spec. ``find`` searches a window, given how much of it was already searched."""

    __slots__ = ("_literal", "_regex", "mode", "pattern")

    def __init__(self, pattern: bytes, mode: MatchMode = "literal") -> None:
        if not pattern:
            raise InvalidArgument(messages.MATCH_EMPTY)
        self.pattern = pattern
        self.mode = mode
        self._literal: bytes | None = None
        self._regex: re.Pattern[bytes] | None = None
        if mode == "literal":
            self._literal = pattern
        else:
            source = pattern if mode == "regex" else glob_to_regex(pattern.strip(b"*") or b"*")
            try:
                self._regex = re.compile(source, re.MULTILINE)
            except re.error as exc:
                raise InvalidArgument(messages.MATCH_BAD_REGEX.format(error=exc)) from None

    @classmethod
    def from_spec(cls, spec: Any) -> Matcher:
        """Build from the tool shape ``{"pattern", "mode", "pattern_encoding"}`` (or a bare string)."""
        if isinstance(spec, str):
            spec = {"pattern": spec}
        if not isinstance(spec, dict):
            raise InvalidArgument(messages.MATCH_NOT_OBJECT)
        unknown = sorted(set(spec) - set(MATCH_KEYS))
        if unknown:
            raise InvalidArgument(
                messages.MATCH_UNKNOWN_KEY.format(key=unknown[0], allowed=", ".join(MATCH_KEYS))
            )
        pattern = spec.get("pattern")
        if not isinstance(pattern, str):
            raise InvalidArgument(messages.MATCH_NO_PATTERN)
        mode = spec.get("mode", "literal")
        if mode not in MATCH_MODES:
            raise InvalidArgument(messages.MATCH_BAD_MODE.format(value=mode, allowed=", ".join(MATCH_MODES)))
        raw = decode_input(pattern, str(spec.get("pattern_encoding", "utf8")), field="match.pattern")
        return cls(raw, mode)

    def find(self, window: bytes, searched: int = 0) -> Span | None:
        """First match in ``window``; ``window[:searched]`` is known to hold no complete match."""
        if self._literal is not None:
            begin = max(0, searched - len(self._literal) + 1)
            i = window.find(self._literal, begin)
            return None if i < 0 else Span(i, i + len(self._literal))
        assert self._regex is not None
        m = self._regex.search(window)
        return None if m is None else Span(m.start(), m.end())
