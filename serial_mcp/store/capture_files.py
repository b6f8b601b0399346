"""Reading capture files and writing the reports made from them, for the bench commands.

The one place the ``view`` command touches the file system for user files: read a capture's bytes,
write a report atomically (``store/atomic``: a temp file in the same directory, fsync, rename, so
a browser or a CI artifact upload never sees half a page). A report is derived data, so writing one
replaces an older report of the same name.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from serial_mcp import messages
from serial_mcp.core.capture import Capture, decode_lines, parse_capture
from serial_mcp.errors import ErrorCode, SerialMcpError
from serial_mcp.store.atomic import replace_atomic

__all__ = ["read_capture_bytes", "write_report"]


def read_capture_bytes(path: str | Path) -> bytes:
    """The whole file; ``SerialMcpError(ErrorCode.FILE_UNREADABLE)`` naming the path and the reason."""
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise SerialMcpError(
            ErrorCode.FILE_UNREADABLE, messages.VIEW_CANNOT_READ.format(path=path, reason=exc.strerror or exc)
        ) from None


def write_report(path: str | Path, text: str) -> int:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns the number of bytes written. A new
    report is readable by everyone the umask allows (like any file a command writes)."""
    target = Path(path)
    data = text.encode("utf-8")
    try:
        existed = target.exists()
        replace_atomic(target, data)
        if not existed:
            umask = os.umask(0)
            os.umask(umask)
            with contextlib.suppress(OSError):
                os.chmod(target, 0o666 & ~umask)
    except OSError as exc:
        raise SerialMcpError(
            ErrorCode.FILE_UNWRITABLE,
            messages.VIEW_CANNOT_WRITE.format(path=path, reason=exc.strerror or exc),
        ) from None
    return len(data)


def read_capture(path: str | Path) -> Capture:
    """Read and validate a capture file; an unterminated, non-JSON last line is tolerated."""
    raw = Path(path).read_bytes()
    return parse_capture(decode_lines(raw), torn_tail_ok=not raw.endswith(b"\n"))
