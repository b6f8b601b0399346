"""The one exception type every layer raises for a failure the user can act on.

Each error carries a stable machine-readable ``code`` (part of the tool contract)
and a human message built from ``messages.py``.
"""

from __future__ import annotations

from typing import Any


class SerialMcpError(Exception):
    """A failure with a stable code (``invalid_argument``, ``port_busy`` ...) and a clear message."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
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
