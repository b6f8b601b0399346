"""CaptureStore: capture files in one directory — bare names only, no clobbering, quotas, no symlinks.

Tools never pass paths: a name is ``[A-Za-z0-9][A-Za-z0-9._-]*.jsonl`` (≤ 120 characters, no
``..``, no reserved device names) inside the configured directory. Files are created with
``O_EXCL | O_NOFOLLOW``; an export is written to a temp file, fsynced, then hard-linked to its name
(which fails if the name exists), so a reader never sees a half-written export and nothing is ever
overwritten. Quotas (bytes per file, bytes in total, file count) are checked under a lock file
shared by every process using the directory.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from serial_mcp import messages
from serial_mcp.core.capture import Capture, decode_lines, parse_capture
from serial_mcp.errors import (
    AccessError,
    Conflict,
    ErrorCode,
    InvalidArgument,
    LimitReached,
    SerialMcpError,
    StorageError,
    storage_error,
)
from serial_mcp.store.atomic import create_atomic

if TYPE_CHECKING:
    from filelock import FileLock

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\.jsonl")
MAX_NAME = 120
RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}
LOCK_NAME = ".serial-mcp-captures.lock"
DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_TOTAL_BYTES = 1024 * 1024 * 1024
DEFAULT_MAX_FILES = 1000


@dataclass(frozen=True, slots=True)
class Quotas:
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES
    max_files: int = DEFAULT_MAX_FILES


@dataclass(frozen=True, slots=True)
class CaptureInfo:
    """What ``list`` tells about a capture file (header fields are None when it cannot be parsed)."""

    name: str
    size: int
    created: str | None
    port: str | None
    duration: float | None
    events: int | None
    error: str | None = None


def validate_name(name: str) -> str:
    """The name itself, or ``InvalidArgument`` saying which rule it breaks."""
    if not isinstance(name, str) or not name:
        raise InvalidArgument(messages.CAPTURE_NAME_EMPTY)
    if len(name) > MAX_NAME:
        raise InvalidArgument(messages.CAPTURE_NAME_LONG.format(max=MAX_NAME))
    if "/" in name or "\\" in name or ".." in name or "\x00" in name:
        raise InvalidArgument(messages.CAPTURE_NAME_PATH.format(name=name))
    if not NAME_RE.fullmatch(name):
        raise InvalidArgument(messages.CAPTURE_NAME_SHAPE.format(name=name))
    if name.split(".", 1)[0].lower() in RESERVED:
        raise InvalidArgument(messages.CAPTURE_NAME_RESERVED.format(name=name))
    return name


def _exists(name: str) -> SerialMcpError:
    return Conflict(ErrorCode.CAPTURE_EXISTS, messages.CAPTURE_EXISTS.format(name=name))


class CaptureStore:
    """The capture directory; ``None`` means exporting and recording are disabled."""

    def __init__(self, directory: Path | None, quotas: Quotas | None = None) -> None:
        self.directory = directory
        self.quotas = quotas or Quotas()
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.directory is not None

    def prepare(self) -> None:
        """Create the directory now and check that it can be written: a server start with an
        unusable ``--capture-dir`` stops with one line, instead of failing at the first record."""
        if self.directory is None:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            if not os.access(self.directory, os.W_OK | os.X_OK):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        except OSError as exc:
            raise StorageError(
                ErrorCode.STORAGE_ERROR,
                messages.CAPTURE_DIR_UNUSABLE.format(dir=self.directory, error=exc.strerror or exc),
            ) from None

    def _dir(self) -> Path:
        if self.directory is None:
            raise AccessError(ErrorCode.CAPTURE_DISABLED, messages.CAPTURE_DISABLED)
        self.directory.mkdir(parents=True, exist_ok=True)
        return self.directory

    def _file_lock(self) -> FileLock:
        from filelock import FileLock  # a server that writes no capture never loads it (issue 27)

        return FileLock(str(self._dir() / LOCK_NAME), timeout=30)

    def usage(self) -> tuple[int, int]:
        """(files, bytes) of the capture files in the directory (symlinks are not counted or followed)."""
        files = total = 0
        for entry in os.scandir(self._dir()):
            if entry.name.endswith(".jsonl") and entry.is_file(follow_symlinks=False):
                files += 1
                total += entry.stat(follow_symlinks=False).st_size
        return files, total

    def path_of(self, name: str) -> Path:
        return self._dir() / validate_name(name)

    def _check_quota(self, adding: int) -> int:
        """Raise if one more file of ``adding`` bytes would break a quota; return the bytes still allowed."""
        files, total = self.usage()
        q = self.quotas
        if files + 1 > q.max_files:
            raise LimitReached(ErrorCode.QUOTA_EXCEEDED, messages.CAPTURE_QUOTA_FILES.format(max=q.max_files))
        room = min(q.max_file_bytes, q.max_total_bytes - total)
        if adding > room:
            raise LimitReached(
                ErrorCode.QUOTA_EXCEEDED,
                messages.CAPTURE_QUOTA_BYTES.format(
                    need=adding, room=max(0, room), file=q.max_file_bytes, total=q.max_total_bytes
                ),
            )
        return room

    def export(self, name: str, lines: Iterable[str]) -> tuple[Path, int]:
        """Write a whole capture atomically under ``name``; never overwrites. Returns (path, bytes)."""
        body = "".join(line + "\n" for line in lines).encode("utf-8")
        with storage_errors():
            return self._export(name, body)

    def _export(self, name: str, body: bytes) -> tuple[Path, int]:
        final = self.path_of(name)
        with self._lock, self._file_lock():
            if os.path.lexists(final):
                raise _exists(name)
            self._check_quota(len(body))
            try:
                create_atomic(final, body)  # no-clobber commit: fails if the name appeared meanwhile
            except FileExistsError:
                raise _exists(name) from None
        return final, len(body)

    def create_recording(self, name: str) -> tuple[IO[bytes], Path, int]:
        """A new, empty file for continuous recording, plus how many bytes it may grow to."""
        with storage_errors():
            return self._create_recording(name)

    def _create_recording(self, name: str) -> tuple[IO[bytes], Path, int]:
        final = self.path_of(name)
        with self._lock, self._file_lock():
            room = self._check_quota(0)
            try:
                fd = os.open(final, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            except OSError as exc:
                if isinstance(exc, FileExistsError) or exc.errno == errno.ELOOP:
                    raise _exists(name) from None
                raise
        return os.fdopen(fd, "wb"), final, room

    def _list(self) -> list[CaptureInfo]:
        out: list[CaptureInfo] = []
        for entry in sorted(os.scandir(self._dir()), key=lambda e: e.name):
            if not (entry.name.endswith(".jsonl") and entry.is_file(follow_symlinks=False)):
                continue
            if entry.name.startswith("."):
                continue
            size = entry.stat(follow_symlinks=False).st_size
            try:
                cap = read_capture_file(Path(entry.path))
                out.append(
                    CaptureInfo(
                        entry.name, size, cap.header.created, cap.header.port, cap.duration, len(cap.events)
                    )
                )
            except (SerialMcpError, OSError, ValueError) as exc:
                out.append(CaptureInfo(entry.name, size, None, None, None, None, str(exc)))
        return out

    def list(self) -> list[CaptureInfo]:
        with storage_errors():
            return self._list()


@contextlib.contextmanager
def storage_errors() -> Iterator[None]:
    """Turn an ``OSError`` of the capture directory into ``storage_error``."""
    try:
        yield
    except OSError as exc:
        raise storage_error(exc) from exc


def read_capture_file(path: Path) -> Capture:
    """Read and validate a capture file; an unterminated, non-JSON last line is tolerated (a
    recording cut short). The bytes are read here; ``core.capture`` only parses them."""
    raw = path.read_bytes()
    return parse_capture(decode_lines(raw), torn_tail_ok=not raw.endswith(b"\n"))
