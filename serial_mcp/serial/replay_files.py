"""Finding and reading capture files for ``replay://``: where relative names are looked up, the
server's confinement (``ReplayScope``) and a read through one descriptor that is checked to be
the file that was judged.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from serial_mcp import messages
from serial_mcp.errors import AccessError, ErrorCode, PortError


def replay_bases(captures_dir: Path | None = None) -> list[Path]:
    """Where a relative replay name is looked up, in order: the working directory, ``captures_dir``
    (relative: from the working directory; default ``captures/``), then the project's ``captures/``.
    A confined opener (the server's, ``ReplayScope``) tries only those in scope: the working directory
    itself is not (it is wherever the server was launched, often a home directory); ``not_read``
    says so in the error."""
    cwd = Path.cwd()
    bases = [cwd, cwd / (captures_dir if captures_dir is not None else Path("captures")), cwd / "captures"]
    return list(dict.fromkeys(bases))


def replay_candidates(path: str, captures_dir: Path | None = None) -> list[Path]:
    """The files ``replay://<path>`` may name, in the order they are tried."""
    given = Path(path)
    return [given] if given.is_absolute() else [base / given for base in replay_bases(captures_dir)]


def not_read(candidates: list[Path], scope: ReplayScope | None) -> str:
    """The part of a "not found" error naming the candidates the scope kept out (the same words
    whatever exists there), and how to let the server read such a file."""
    if scope is None:
        return ""
    skipped = [str(c) for c in candidates if not scope.covers(c)]
    if not skipped:
        return ""
    return messages.REPLAY_NOT_READ.format(paths=", ".join(skipped))


def real_path(path: Path | str) -> str:
    """``path`` with every symlink and ``..`` resolved (a missing tail is kept, normalised)."""
    return os.path.realpath(path)


@dataclass(frozen=True, slots=True)
class ReplayScope:
    """Where the server's ``replay://`` may read: the capture directory and the working directory's
    ``captures/`` (any depth, judged on real paths), plus real-path globs from the operator's
    allowlist. Everything else is refused with one error, whatever exists there."""

    captures_dir: Path | None = None
    globs: Callable[[], list[str]] | None = None  # the allowlist's replay globs, computed at open time

    def _dirs(self) -> list[Path]:
        cwd = Path.cwd()
        return [*([cwd / self.captures_dir] if self.captures_dir is not None else []), cwd / "captures"]

    def roots(self) -> list[str]:
        """The real directories replay may read below (computed now: the working directory may change)."""
        return list(dict.fromkeys(real_path(d) for d in self._dirs()))

    def covers(self, candidate: Path) -> bool:
        """Whether a name, taken literally (``..`` folded, links not followed), points into scope;
        names that do not are never candidates (a relative name is not read from the working dir)."""
        lexical = os.path.normpath(os.path.abspath(candidate))
        dirs = [os.path.normpath(os.path.abspath(d)) for d in self._dirs()] + self.roots()
        return any(_below(d, lexical) for d in dirs) or self._glob(lexical)

    def admits(self, real: str) -> bool:
        """Whether the real path ``real`` lies in scope (a decision on the path alone: what exists
        there, if anything, does not change it)."""
        return any(_below(root, real) for root in self.roots()) or self._glob(real)

    def _glob(self, path: str) -> bool:
        return any(fnmatch.fnmatchcase(path, g) for g in (self.globs() if self.globs else []))


def _below(directory: str, path: str) -> bool:
    return os.path.commonpath([directory, path]) == directory


def read_capture_bytes(path: Path, max_file_bytes: int, *, confined: bool) -> bytes:
    """The file's bytes, through one descriptor: confined, the judged real path is opened without
    following a final symlink, must still be a regular file and (where /proc tells) still that path."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (getattr(os, "O_NOFOLLOW", 0) if confined else 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if confined and exc.errno == errno.ELOOP:
            raise AccessError(ErrorCode.NOT_ALLOWED, messages.REPLAY_CHANGED.format(path=str(path))) from None
        raise
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (confined and not _fd_is(fd, str(path))):
            raise AccessError(ErrorCode.NOT_ALLOWED, messages.REPLAY_CHANGED.format(path=str(path)))
        if st.st_size > max_file_bytes:
            raise PortError(
                ErrorCode.PORT_OPEN_FAILED,
                messages.REPLAY_TOO_BIG.format(path=str(path), size=st.st_size, max=max_file_bytes),
            )
        raw = f.read(max_file_bytes + 1)
    if len(raw) > max_file_bytes:
        raise PortError(
            ErrorCode.PORT_OPEN_FAILED,
            messages.REPLAY_TOO_BIG.format(path=str(path), size=len(raw), max=max_file_bytes),
        )
    return raw


def _fd_is(fd: int, path: str) -> bool:
    """Whether the open descriptor is the file at ``path`` (Linux: the kernel's own path for it;
    elsewhere: the same device and inode as ``path`` now)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}") == path
    except OSError:
        pass
    try:
        st, now = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino)
