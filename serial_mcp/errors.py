"""The errors every layer raises for a failure the user can act on: ``SerialMcpError`` and its families.

Each error carries a stable machine-readable ``code`` (part of the tool contract)
and a human message built from ``messages.py``. A message never carries a huge value: ``brief``
quotes a short prefix of one (and its length), and every message is capped at ``MAX_MESSAGE``.
"""

from __future__ import annotations

import copyreg
import re
from enum import StrEnum
from typing import Any, ClassVar

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


DEPRECATED_CODES = {"busy": "port_busy", "unsupported": "not_supported"}  # old value: the one that survives


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
    WRITE_TIMEOUT = "write_timeout"

    # Deprecated in 0.2 (issue 41.4: one code per meaning), gone in 0.3: each old name is the member of
    # the code that replaced it (``ErrorCode.BUSY is ErrorCode.PORT_BUSY``), and its old value reads
    # as that code (``ErrorCode("busy")``). Errors carry, and the wire sends, only the new value.
    BUSY = "port_busy"  # was "busy": a lab place held by someone else is now port_busy like any port
    UNSUPPORTED = "not_supported"  # was "unsupported": modem lines a port does not have

    @classmethod
    def _missing_(cls, value: object) -> ErrorCode | None:
        new = DEPRECATED_CODES.get(value) if isinstance(value, str) else None
        return None if new is None else cls(new)


def _codes(*names: str) -> tuple[ErrorCode, ...]:
    """A family's codes by their wire names (a misspelt one fails at import)."""
    return tuple(ErrorCode(name) for group in names for name in group.split())


def _redact(port: str) -> str:
    """``port`` without its secrets (a URL's password), as messages show it."""
    from serial_mcp.core.port_secrets import redact

    return redact(str(port))


class SerialMcpError(Exception):
    """A failure with a stable code (``invalid_argument``, ``port_busy`` ...) and a clear message.

    Every failure is raised as its family (``PortError``, ``AccessError`` ...: the classes below, one
    per kind of failure, each listing its ``codes``), so a caller can catch a kind of failure as well
    as test ``exc.code``. Context: ``port`` (its secrets redacted) and ``connection_id`` where the
    raise site knows them; ``operation`` (the tool's name) and a missing ``connection_id`` are
    attached by the engine as the error leaves an operation (None where it had none). ``details``
    holds the rest (``field``, ``suggestions`` ...). Raised as itself only for ``internal_error``."""

    codes: ClassVar[tuple[ErrorCode, ...]] = (ErrorCode.INTERNAL_ERROR,)

    def __init__(
        self,
        code: ErrorCode | str,
        message: str,
        /,
        *,
        port: str | None = None,
        connection_id: str | None = None,
        **details: Any,
    ) -> None:
        message = capped(str(message))
        super().__init__(message)
        self.code: ErrorCode = ErrorCode(code)  # an unknown code is a bug, caught by the tests
        self.message = message
        self.details = details
        self.port = port if port is None else _redact(port)
        self.connection_id = connection_id
        self.operation: str | None = None

    def __reduce__(self) -> tuple[Any, ...]:  # pickles (multiprocessing, pytest-xdist) as it was raised
        return (copyreg.__newobj__, (type(self), self.message), self.__dict__)  # type: ignore[attr-defined]

    def attach(self, operation: str, connection_id: str | None) -> None:
        """Say which operation (and connection) failed, unless an inner one already said."""
        if self.operation is None:
            self.operation = operation
        if self.connection_id is None:
            self.connection_id = connection_id


class InvalidArgument(SerialMcpError):
    """An argument is malformed or out of range; nothing was changed. ``InvalidArgument(message)``
    is ``invalid_argument``; ``(code, message)`` names which argument: a capture, the config."""

    codes = _codes("invalid_argument capture_invalid invalid_config")

    def __init__(self, first: ErrorCode | str, message: str | None = None, /, **context: Any) -> None:
        if message is None:
            first, message = ErrorCode.INVALID_ARGUMENT, first
        super().__init__(first, message, **context)


class PortError(SerialMcpError):
    """The port or connection: not found, busy, failed to open, lost, closed, an I/O error, a lab
    place's coordinator out of reach (``unavailable``)."""

    codes = _codes(
        "port_not_found port_busy port_ambiguous port_open_failed not_connected connection_closed",
        "io_error port_released unavailable",
    )


class AccessError(SerialMcpError):
    """Not allowed here: read-only mode, the allowlist, another session's connection, a disabled
    store, an operating-system permission."""

    codes = _codes(
        "read_only_mode not_allowed not_owner permission_denied capture_disabled profiles_disabled"
    )


class OperationTimeout(SerialMcpError):
    """Something did not happen in time: a reply, a write, a cursor held by another read."""

    codes = _codes("timeout write_timeout cursor_busy")


class NotFound(SerialMcpError):
    """A named thing that does not exist: a connection, a profile, a tool, a recording, a file."""

    codes = _codes("connection_not_found profile_not_found unknown_tool not_recording file_unreadable")


class Conflict(SerialMcpError):
    """The state forbids it now: already recording, a profile in use or changed meanwhile, a lent
    port, a cancelled call."""

    codes = _codes(
        "already_recording capture_exists profile_exists profile_in_use profile_no_unique_port",
        "port_lent revision_conflict cancelled",
    )


class LimitReached(SerialMcpError):
    """A bound was reached: quotas, memory, connections."""

    codes = _codes("quota_exceeded resource_limit too_many_connections")


class StorageError(SerialMcpError):
    """The disk behind captures or profiles failed."""

    codes = _codes("storage_error profile_store_io profile_store_invalid file_unwritable")


class DeviceError(SerialMcpError):
    """The device (or what leads to it) cannot do what the operation needs: MicroPython, settings
    refused, RS-485, modem lines, reconnect, a lab control (``not_supported``)."""

    codes = _codes("mpy_failed not_in_repl settings_rejected rs485_unsupported not_supported")


FAMILIES: tuple[type[SerialMcpError], ...] = (
    SerialMcpError, InvalidArgument, PortError, AccessError, OperationTimeout, NotFound, Conflict,
    LimitReached, StorageError, DeviceError,
)  # fmt: skip
# The one table from code to the class raised for it (each code in exactly one family's ``codes``:
# tests/unit/test_errors.py); a deprecated alias (``ErrorCode.BUSY``) is its surviving code's member.
FAMILY: dict[ErrorCode, type[SerialMcpError]] = {code: fam for fam in FAMILIES for code in fam.codes}


def storage_error(exc: OSError) -> StorageError:
    """A failure of the capture directory's disk (ENOSPC, EROFS, EACCES, EIO): ``storage_error``,
    never the port's ``io_error`` — the port is fine. (Here, not in store/, because the recorder's
    writer thread in serial/ reports it too.)"""
    from serial_mcp import messages

    return StorageError(ErrorCode.STORAGE_ERROR, messages.STORAGE_ERROR.format(error=exc.strerror or exc))
