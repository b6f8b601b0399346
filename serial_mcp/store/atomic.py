"""Durable file commits: write a temp file next to the target, fsync it, then make it the target
in one step (``os.replace`` to overwrite, ``os.link`` to create without clobbering), then fsync
the directory so the rename itself survives a power cut.

Nothing touches the target before that single step, so a failure or a crash at any point leaves
it as it was; at worst a temp file is left behind, which ``remove_stale_temps`` clears.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
import threading
import time
from pathlib import Path

_TEMP_SUFFIX = ".tmp"


def _temp_prefix(path: Path) -> str:
    return f".{path.name}."


def write_synced(fd: int, data: bytes) -> None:
    """Write ``data`` to the open file ``fd``, flush and fsync it, and close it."""
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def fsync_dir(directory: Path) -> None:
    """Make a rename or link in ``directory`` durable (POSIX; Windows has no directory fsync).

    Best effort: a file system that cannot fsync a directory is not an error.
    """
    if sys.platform == "win32":
        return
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def replace_atomic(path: Path, data: bytes) -> None:
    """Make ``path`` hold ``data``: temp file ``.<name>.*.tmp`` in the same directory, fsync,
    the old file's permission bits, ``os.replace``, fsync the directory.

    Any failure removes the temp file and leaves ``path`` untouched (OSError propagates).
    """
    directory = path.parent
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path), suffix=_TEMP_SUFFIX, dir=directory)
    try:
        write_synced(fd, data)
        with contextlib.suppress(FileNotFoundError):
            os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))
        _replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(directory)


def create_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Create ``path`` holding ``data``, never overwriting: temp file (``O_EXCL | O_NOFOLLOW``),
    fsync, ``os.link`` to the name, fsync the directory. A reader never sees a partial file.

    ``FileExistsError`` if ``path`` exists (or appears meanwhile); the temp file is always removed.
    """
    tmp = path.with_name(f"{_temp_prefix(path)}{os.getpid()}.{threading.get_ident()}{_TEMP_SUFFIX}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        write_synced(fd, data)
        os.link(tmp, path)  # the no-clobber commit: fails if the name exists
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    fsync_dir(path.parent)


def remove_stale_temps(path: Path) -> None:
    """Delete the temp files a crashed writer of ``path`` left behind.

    Only safe while holding whatever lock serialises the writers of ``path``.
    """
    prefix = _temp_prefix(path)
    with os.scandir(path.parent) as entries:
        for entry in entries:
            if entry.name.startswith(prefix) and entry.name.endswith(_TEMP_SUFFIX):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _replace(src: str, dst: Path) -> None:
    """``os.replace``; on Windows a reader holding the file open makes it fail briefly, so retry."""
    attempts = 20 if sys.platform == "win32" else 1
    for attempt in range(attempts):
        try:
            os.replace(src, dst)
            return
        except PermissionError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.05)
