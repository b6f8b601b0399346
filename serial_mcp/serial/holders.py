"""Which processes hold a device node open (Linux: the ``/proc/<pid>/fd`` links), and when one
opens or closes it (Linux: inotify)."""

from __future__ import annotations

import contextlib
import os
import struct
import sys
from typing import Literal

PROC = "/proc"


def can_watch(proc: str = PROC) -> bool:
    """True where ``/proc/<pid>/fd`` can be read (Linux); elsewhere a lend ends only by reclaim or timeout."""
    return os.path.isdir(os.path.join(proc, str(os.getpid()), "fd"))


def holders_of(path: str, proc: str = PROC) -> frozenset[int]:
    """The pids (other than ours) with ``path`` open. Blocking: run it off the event loop.
    Processes of other users, whose fds cannot be read, are not seen."""
    target = os.path.realpath(path)
    me = os.getpid()
    found: set[int] = set()
    try:
        entries = os.listdir(proc)
    except OSError:
        return frozenset()
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        fd_dir = os.path.join(proc, entry, "fd")
        try:
            fds = os.listdir(fd_dir)
        except OSError:  # gone meanwhile, or not ours to look at
            continue
        for fd in fds:
            try:
                if os.readlink(os.path.join(fd_dir, fd)) == target:
                    found.add(int(entry))
                    break
            except OSError:
                continue
    return frozenset(found)


IN_CLOSE_WRITE = 0x08
IN_CLOSE_NOWRITE = 0x10
IN_OPEN = 0x20
IN_Q_OVERFLOW = 0x4000
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then the name)


class NodeEvents:
    """Opens and closes of one device node by any process, from Linux inotify (so a borrower that
    holds the node for a few milliseconds is not missed between two scans). ``fd`` becomes readable
    when something happened; ``read`` says what, in order."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @classmethod
    def watch(cls, path: str) -> NodeEvents | None:
        """A watch on ``path``, or None where inotify is not there (not Linux, no libc, a limit)."""
        if not sys.platform.startswith("linux"):
            return None
        import ctypes  # only a watch on a device node loads it (issue 27: idle memory)

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError):
            return None
        if fd < 0:
            return None
        mask = IN_OPEN | IN_CLOSE_WRITE | IN_CLOSE_NOWRITE
        if libc.inotify_add_watch(fd, os.fsencode(os.path.realpath(path)), mask) < 0:
            os.close(fd)
            return None
        return cls(fd)

    def read(self) -> list[Literal["open", "close", "overflow"]]:
        try:
            data = os.read(self.fd, 4096)
        except BlockingIOError:
            return []
        out: list[Literal["open", "close", "overflow"]] = []
        i = 0
        while i + _EVENT.size <= len(data):
            _wd, mask, _cookie, length = _EVENT.unpack_from(data, i)
            i += _EVENT.size + length
            if mask & IN_OPEN:
                out.append("open")
            if mask & (IN_CLOSE_WRITE | IN_CLOSE_NOWRITE):
                out.append("close")
            if mask & IN_Q_OVERFLOW:  # events were dropped: the open count cannot be trusted
                out.append("overflow")
        return out

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)
