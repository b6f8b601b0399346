"""Reading capture files and writing the reports made from them, for the bench commands.

The one place the ``view`` command touches the file system for user files: read a capture's bytes,
write a report atomically (``store/atomic``: a temp file in the same directory, fsync, rename, so
a browser or a CI artifact upload never sees half a page). A report is derived data, so writing one
replaces an older report of the same name.

``read_regular_file`` is the view's reader: one descriptor, opened without blocking (a FIFO with no
writer does not hang the open), checked to be a regular file (or, for the view, a FIFO, read on
that same descriptor) and read up to a size cap, so a device
(``/dev/zero``) or an endless pipe is refused with what it is instead of read until memory runs out.
"""

from __future__ import annotations

import contextlib
import os
import select
import stat
from pathlib import Path

from serial_mcp import messages
from serial_mcp.core.capture import Capture, decode_lines, parse_capture
from serial_mcp.errors import ErrorCode, NotFound, SerialMcpError, StorageError
from serial_mcp.store.atomic import replace_atomic

_GROWTH_CHUNK = 1 << 20  # reads past the size the file had when opened (a /proc file says 0)
_KINDS = (
    (stat.S_ISFIFO, messages.FILE_KIND_FIFO),
    (stat.S_ISCHR, messages.FILE_KIND_CHAR),
    (stat.S_ISBLK, messages.FILE_KIND_BLOCK),
    (stat.S_ISSOCK, messages.FILE_KIND_SOCKET),
    (stat.S_ISDIR, messages.FILE_KIND_DIR),
)


class NotRegularFile(Exception):
    """The path is a FIFO, a device, a socket or a directory (``kind`` says which, in words)."""

    def __init__(self, path: str, kind: str) -> None:
        super().__init__(f"{path}: {kind}")
        self.path, self.kind = path, kind


class TooBig(Exception):
    """The file holds more than the cap (``size`` is a lower bound when the file kept growing)."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(f"{path}: {size} > {limit} bytes")
        self.path, self.size, self.limit = path, size, limit


def file_kind(mode: int) -> str | None:
    """What a non-regular file is (``a FIFO (named pipe)`` ...); None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), messages.FILE_KIND_OTHER)


def read_regular_file(path: str | Path, max_bytes: int, *, pipes: bool = False) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them; with ``pipes``, a
    FIFO's too, read on the same descriptor as ``cat`` reads one (see ``_read_pipe``).

    ``NotRegularFile`` for anything else (checked on the open descriptor, so what is read is what
    was checked), ``TooBig`` past the cap (by its size, or by reading one byte more: a file that
    grows meanwhile), ``SerialMcpError(FILE_UNREADABLE)`` when it cannot be opened or read."""
    name = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise unreadable(name, exc) from None
    try:
        st = os.fstat(fd)
        kind = file_kind(st.st_mode)
    except OSError as exc:
        os.close(fd)
        raise unreadable(name, exc) from None
    if pipes and stat.S_ISFIFO(st.st_mode):
        try:
            return _read_pipe(fd, name, max_bytes)
        finally:
            os.close(fd)
    if kind is not None:  # before fdopen, which refuses a directory with an errno of its own
        os.close(fd)
        raise NotRegularFile(name, kind)
    if st.st_size > max_bytes:
        os.close(fd)
        raise TooBig(name, st.st_size, max_bytes)
    chunks, got = [], 0
    with os.fdopen(fd, "rb", buffering=0) as f:
        want = st.st_size + 1  # the whole file and one byte to see its end (or that it grew)
        try:
            while got <= max_bytes and (chunk := f.read(min(want, max_bytes + 1 - got))):
                chunks.append(chunk)
                got += len(chunk)
                want = _GROWTH_CHUNK
        except OSError as exc:
            raise unreadable(name, exc) from None
    if got > max_bytes:
        raise TooBig(name, got, max_bytes)
    return b"".join(chunks)


def _read_pipe(fd: int, name: str, max_bytes: int) -> bytes:
    """A FIFO's bytes until its writers are gone, on the descriptor that judged it. It was opened
    without waiting, and never closed meanwhile: a writer that opens, writes and closes before the
    first read has its bytes kept in the pipe for us (a second open would lose them and then wait
    for a writer that never comes). Poll blocks until a writer has come (Linux raises POLLHUP on a
    FIFO only after a writer opened it since our open), so this waits as ``cat`` does."""
    chunks: list[bytes] = []
    got = 0
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    try:
        while got <= max_bytes:
            poller.poll()
            try:
                chunk = os.read(fd, min(1 << 20, max_bytes + 1 - got))
            except BlockingIOError:
                continue
            if not chunk:  # POLLHUP and nothing left: every writer has gone
                break
            chunks.append(chunk)
            got += len(chunk)
    except OSError as exc:
        raise unreadable(name, exc) from None
    if got > max_bytes:
        raise TooBig(name, got, max_bytes)
    return b"".join(chunks)


def unreadable(path: str | Path, exc: OSError) -> SerialMcpError:
    return NotFound(
        ErrorCode.FILE_UNREADABLE, messages.VIEW_CANNOT_READ.format(path=path, reason=exc.strerror or exc)
    )


def read_capture_bytes(path: str | Path) -> bytes:
    """The whole file; ``SerialMcpError(ErrorCode.FILE_UNREADABLE)`` naming the path and the reason."""
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise unreadable(path, exc) from None


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
        raise StorageError(
            ErrorCode.FILE_UNWRITABLE,
            messages.VIEW_CANNOT_WRITE.format(path=path, reason=exc.strerror or exc),
        ) from None
    return len(data)


def read_capture(path: str | Path) -> Capture:
    """Read and validate a capture file; an unterminated, non-JSON last line is tolerated."""
    raw = Path(path).read_bytes()
    return parse_capture(decode_lines(raw), torn_tail_ok=not raw.endswith(b"\n"))
