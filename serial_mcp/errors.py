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
    BUSY = "busy"  # a lab place (labgrid://) acquired by someone else; port_busy is for local ports
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
    PORT_LENT = "port_lent"
    PORT_NOT_FOUND = "port_not_found"
    PORT_OPEN_FAILED = "port_open_failed"
    PORT_RELEASED = "port_released"
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
    UNAVAILABLE = "unavailable"  # the lab's coordinator (or a place's exporter) cannot be reached
    UNSUPPORTED = "unsupported"
    WRITE_TIMEOUT = "write_timeout"


class SerialMcpError(Exception):
    """A failure with a stable code (``invalid_argument``, ``port_busy`` ...) and a clear message.

    Raised as the subclass of its code's family (``FAMILY``), so a caller can catch a kind of
    failure (``except PortError``) as well as test ``exc.code``; ``SerialMcpError(code, text)``
    itself builds the right subclass. ``operation`` (the tool's name) and ``connection_id`` are
    attached by the engine as the error leaves an operation (None where it had none)."""

    def __new__(cls, code: ErrorCode | str, message: str = "", **details: Any) -> SerialMcpError:
        if cls is SerialMcpError:
            cls = FAMILY.get(ErrorCode(code), SerialMcpError)
        return Exception.__new__(cls)

    def __init__(self, code: ErrorCode | str, message: str, **details: Any) -> None:
        message = capped(str(message))
        super().__init__(message)
        self.code: ErrorCode = ErrorCode(code)  # an unknown code is a bug, caught by the tests
        self.message = message
        self.details = details
        self.operation: str | None = None
        self.connection_id: str | None = None

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:  # pickles (multiprocessing, pytest-xdist) as it was raised
        return (_rebuild, (self.code, self.message, self.details, self.operation, self.connection_id))

    def attach(self, operation: str, connection_id: str | None) -> None:
        """Say which operation (and connection) failed, unless an inner one already said."""
        if self.operation is None:
            self.operation = operation
        if self.connection_id is None:
            self.connection_id = connection_id


def _rebuild(
    code: ErrorCode, message: str, details: dict[str, Any], operation: str | None, cid: str | None
) -> SerialMcpError:
    exc = SerialMcpError(code, message, **details)
    exc.operation, exc.connection_id = operation, cid
    return exc


class InvalidArgument(SerialMcpError):
    """An argument is malformed or out of range; nothing was changed (``invalid_argument`` and
    the codes that say which argument: ``capture_invalid``, ``invalid_config``)."""

    def __new__(cls, *args: Any, **details: Any) -> InvalidArgument:
        return Exception.__new__(cls)

    def __init__(self, first: ErrorCode | str, message: str | None = None, /, **details: Any) -> None:
        """``InvalidArgument(message)``, or ``(code, message)`` as the family of a code built
        through ``SerialMcpError(code, message)``."""
        if message is None:
            first, message = ErrorCode.INVALID_ARGUMENT, first
        super().__init__(first, message, **details)


class _Family(SerialMcpError):
    """A family raised from a code (``SerialMcpError(code, message)``): constructed like the base."""

    def __new__(cls, code: ErrorCode | str, message: str = "", **details: Any) -> _Family:
        return Exception.__new__(cls)


class PortError(_Family):
    """The port or connection: not found, busy, failed to open, lost, closed, an I/O error."""


class AccessError(_Family):
    """Not allowed here: read-only mode, the allowlist, another session's connection, a disabled
    store, an operating-system permission."""


class OperationTimeout(_Family):
    """Something did not happen in time: a reply, a write, a cursor held by another read."""


class NotFound(_Family):
    """A named thing that does not exist: a connection, a profile, a tool."""


class Conflict(_Family):
    """The state forbids it now: already recording, a profile in use or changed meanwhile."""


class LimitReached(_Family):
    """A bound was reached: quotas, memory, connections."""


class StorageError(_Family):
    """The disk behind captures or profiles failed."""


class DeviceError(_Family):
    """The device answered, but not as the operation needs (MicroPython, settings refused)."""


_CODES: dict[type[SerialMcpError], tuple[ErrorCode, ...]] = {
    InvalidArgument: (ErrorCode.INVALID_ARGUMENT, ErrorCode.CAPTURE_INVALID, ErrorCode.INVALID_CONFIG),
    PortError: (
        ErrorCode.PORT_NOT_FOUND,
        ErrorCode.PORT_BUSY,
        ErrorCode.PORT_AMBIGUOUS,
        ErrorCode.PORT_OPEN_FAILED,
        ErrorCode.NOT_CONNECTED,
        ErrorCode.CONNECTION_CLOSED,
        ErrorCode.IO_ERROR,
        ErrorCode.PORT_RELEASED,
        ErrorCode.BUSY,  # like port_busy: the port cannot be had now (a lab place someone else holds)
        ErrorCode.UNAVAILABLE,  # like port_open_failed: what leads to the port is not reachable
    ),
    AccessError: (
        ErrorCode.READ_ONLY_MODE,
        ErrorCode.NOT_ALLOWED,
        ErrorCode.NOT_OWNER,
        ErrorCode.PERMISSION_DENIED,
        ErrorCode.CAPTURE_DISABLED,
        ErrorCode.PROFILES_DISABLED,
    ),
    OperationTimeout: (ErrorCode.TIMEOUT, ErrorCode.WRITE_TIMEOUT, ErrorCode.CURSOR_BUSY),
    NotFound: (
        ErrorCode.CONNECTION_NOT_FOUND,
        ErrorCode.PROFILE_NOT_FOUND,
        ErrorCode.UNKNOWN_TOOL,
        ErrorCode.NOT_RECORDING,
        ErrorCode.FILE_UNREADABLE,
    ),
    Conflict: (
        ErrorCode.ALREADY_RECORDING,
        ErrorCode.CAPTURE_EXISTS,
        ErrorCode.PROFILE_EXISTS,
        ErrorCode.PROFILE_IN_USE,
        ErrorCode.PROFILE_NO_UNIQUE_PORT,
        ErrorCode.PORT_LENT,
        ErrorCode.REVISION_CONFLICT,
        ErrorCode.CANCELLED,
    ),
    LimitReached: (ErrorCode.QUOTA_EXCEEDED, ErrorCode.RESOURCE_LIMIT, ErrorCode.TOO_MANY_CONNECTIONS),
    StorageError: (
        ErrorCode.STORAGE_ERROR,
        ErrorCode.PROFILE_STORE_IO,
        ErrorCode.PROFILE_STORE_INVALID,
        ErrorCode.FILE_UNWRITABLE,
    ),
    DeviceError: (
        ErrorCode.MPY_FAILED,
        ErrorCode.NOT_IN_REPL,
        ErrorCode.SETTINGS_REJECTED,
        ErrorCode.RS485_UNSUPPORTED,
        ErrorCode.NOT_SUPPORTED,
        ErrorCode.UNSUPPORTED,
    ),
}
# The one table from code to family (every code but internal_error has one: tests/unit/test_errors.py).
FAMILY: dict[ErrorCode, type[SerialMcpError]] = {code: fam for fam, codes in _CODES.items() for code in codes}


def storage_error(exc: OSError) -> SerialMcpError:
    """A failure of the capture directory's disk (ENOSPC, EROFS, EACCES, EIO): ``storage_error``,
    never the port's ``io_error`` — the port is fine. (Here, not in store/, because the recorder's
    writer thread in serial/ reports it too.)"""
    from serial_mcp import messages

    return SerialMcpError(ErrorCode.STORAGE_ERROR, messages.STORAGE_ERROR.format(error=exc.strerror or exc))
