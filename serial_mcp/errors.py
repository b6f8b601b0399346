"""The one exception type every layer raises for a failure the user can act on.

Each error carries a stable machine-readable ``code`` (part of the tool contract)
and a human message built from ``messages.py``. A message never carries a huge value: ``brief``
quotes a short prefix of one (and its length), and every message is capped at ``MAX_MESSAGE``.
"""

from __future__ import annotations

import re
from enum import StrEnum
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

class ErrorCode(StrEnum):
    """Every stable error code, in one place (the tool contract: clients branch on these)."""

    ALREADY_RECORDING = "already_recording"
    CANCELLED = "cancelled"
    CAPTURE_DISABLED = "capture_disabled"
    CAPTURE_EXISTS = "capture_exists"
    CAPTURE_INVALID = "capture_invalid"
    CONNECTION_CLOSED = "connection_closed"
    CONNECTION_NOT_FOUND = "connection_not_found"
    CURSOR_BUSY = "cursor_busy"
    FILE_UNREADABLE = "file_unreadable"
    FILE_UNWRITABLE = "file_unwritable"
    INTERNAL_ERROR = "internal_error"
    INVALID_ARGUMENT = "invalid_argument"
    INVALID_CONFIG = "invalid_config"
    IO_ERROR = "io_error"
    MPY_FAILED = "mpy_failed"
    NOT_ALLOWED = "not_allowed"
    NOT_CONNECTED = "not_connected"
    NOT_IN_REPL = "not_in_repl"
    NOT_OWNER = "not_owner"
    NOT_RECORDING = "not_recording"
    NOT_SUPPORTED = "not_supported"
    PERMISSION_DENIED = "permission_denied"
    PORT_AMBIGUOUS = "port_ambiguous"
    PORT_BUSY = "port_busy"
    PORT_NOT_FOUND = "port_not_found"
    PORT_OPEN_FAILED = "port_open_failed"
    PROFILE_EXISTS = "profile_exists"
    PROFILE_IN_USE = "profile_in_use"
    PROFILE_NO_UNIQUE_PORT = "profile_no_unique_port"
    PROFILE_NOT_FOUND = "profile_not_found"
    PROFILE_STORE_INVALID = "profile_store_invalid"
    PROFILE_STORE_IO = "profile_store_io"
    PROFILES_DISABLED = "profiles_disabled"
    QUOTA_EXCEEDED = "quota_exceeded"
    READ_ONLY_MODE = "read_only_mode"
    RESOURCE_LIMIT = "resource_limit"
    REVISION_CONFLICT = "revision_conflict"
    RS485_UNSUPPORTED = "rs485_unsupported"
    SETTINGS_REJECTED = "settings_rejected"
    STORAGE_ERROR = "storage_error"
    TIMEOUT = "timeout"
    TOO_MANY_CONNECTIONS = "too_many_connections"
    UNKNOWN_TOOL = "unknown_tool"
    UNSUPPORTED = "unsupported"
    WRITE_TIMEOUT = "write_timeout"


class SerialMcpError(Exception):
    """A failure with a stable code (``invalid_argument``, ``port_busy`` ...) and a clear message."""

    def __init__(self, code: ErrorCode, message: str, **details: Any) -> None:
        message = capped(str(message))
        super().__init__(message)
        self.code: ErrorCode = ErrorCode(code)  # an unknown code is a bug, caught by the tests
        self.message = message
        self.details = details

    def __str__(self) -> str:
        return self.message


class InvalidArgument(SerialMcpError):
    """A tool or codec argument is malformed; nothing was changed."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(ErrorCode.INVALID_ARGUMENT, message, **details)


def storage_error(exc: OSError) -> SerialMcpError:
    """A failure of the capture directory's disk (ENOSPC, EROFS, EACCES, EIO): ``storage_error``,
    never the port's ``io_error`` — the port is fine. (Here, not in store/, because the recorder's
    writer thread in serial/ reports it too.)"""
    from serial_mcp import messages

    return SerialMcpError(ErrorCode.STORAGE_ERROR, messages.STORAGE_ERROR.format(error=exc.strerror or exc))
