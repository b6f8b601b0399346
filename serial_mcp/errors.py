"""The one exception type every layer raises for a failure the user can act on.

Each error carries a stable machine-readable ``code`` (part of the tool contract)
and a human message built from ``messages.py``. A message never carries a huge value: ``brief``
quotes a short prefix of one (and its length), and every message is capped at ``MAX_MESSAGE``.
"""

from __future__ import annotations

import re
from typing import Any

BRIEF_CHARS = 80
LONG_RUN = 160  # no word, path or URL in a message is longer; a longer run is a value quoted whole
MAX_MESSAGE = 2000
_LONG_RUN = re.compile(rf"\S{{{LONG_RUN + 1},}}")


def brief(value: Any, limit: int = BRIEF_CHARS) -> str:
    """``value`` quoted for an error message: its repr, or its first ``limit`` characters and its length."""
    if isinstance(value, str | bytes) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value)} {'characters' if isinstance(value, str) else 'bytes'})"
    text = repr(value)
    if len(text) > limit:
        return f"{text[:limit]}... ({len(text)} characters)"
    return text


class Short:
    """Formats as ``{value!r}`` would, through ``brief``: for messages written with ``!r``."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return brief(self.value)

    __str__ = __repr__


def capped(message: str, limit: int = MAX_MESSAGE) -> str:
    """The backstop for values quoted whole: any unbroken run longer than ``LONG_RUN`` characters
    becomes its first ``BRIEF_CHARS`` and its length, and the message is cut to ``limit``."""
    if len(message) > LONG_RUN:
        message = _LONG_RUN.sub(_shorten, message)
    if len(message) <= limit:
        return message
    return f"{message[:limit]}... (message cut: {len(message)} characters)"


def _shorten(m: re.Match[str]) -> str:
    run = m.group()
    return f"{run[:BRIEF_CHARS]}... ({len(run)} characters)"


class SerialMcpError(Exception):
    """A failure with a stable code (``invalid_argument``, ``port_busy`` ...) and a clear message."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        message = capped(str(message))
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    def __str__(self) -> str:
        return self.message


class InvalidArgument(SerialMcpError):
    """A tool or codec argument is malformed; nothing was changed."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__("invalid_argument", message, **details)
