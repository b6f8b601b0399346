"""Which processes hold a device node open (Linux: the ``/proc/<pid>/fd`` links), and when one
opens or closes it (Linux: inotify): for a lent node (``NodeEvents``) and for the nodes we hold
(``OpenWatch``), with the program each holder runs (``program_of``)."""

from __future__ import annotations

import contextlib
import logging
import os
import select
import struct
import sys
import threading
import unicodedata
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, Literal

log = logging.getLogger(__name__)

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


def _inotify() -> tuple[int, Any] | None:
    """A new non-blocking inotify descriptor and the libc that made it, or None where there is none
    (not Linux, no libc, a limit)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # only a watch on a device node loads it (issue 27: idle memory)

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, AttributeError):
        return None
    return (fd, libc) if fd >= 0 else None


def _events(data: bytes) -> Iterator[tuple[int, int]]:
    """``(watch, mask)`` of each inotify event in ``data``."""
    i = 0
    while i + _EVENT.size <= len(data):
        wd, mask, _cookie, length = _EVENT.unpack_from(data, i)
        i += _EVENT.size + length
        yield wd, mask


class NodeEvents:
    """Opens and closes of one device node by any process, from Linux inotify (so a borrower that
    holds the node for a few milliseconds is not missed between two scans). ``fd`` becomes readable
    when something happened; ``read`` says what, in order."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @classmethod
    def watch(cls, path: str) -> NodeEvents | None:
        """A watch on ``path``, or None where inotify is not there (not Linux, no libc, a limit)."""
        made = _inotify()
        if made is None:
            return None
        fd, libc = made
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
        for _wd, mask in _events(data):
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


PROGRAM_CAP = 64  # printable characters of a program name quoted in an event or a status


def program_of(pid: int, proc: str = PROC) -> str | None:
    """The program ``pid`` runs (``python -m esptool`` is ``esptool``), as text safe to quote: any
    process can name itself, so control and format characters are dropped and the name is capped
    at ``PROGRAM_CAP`` characters. None when the process is gone or does not say."""
    try:
        with open(os.path.join(proc, str(pid), "cmdline"), "rb") as f:
            raw = f.read(4096)
    except OSError:
        return None
    args = [a.decode(errors="replace") for a in raw.split(b"\0") if a]
    if len(args) >= 3 and args[1] == "-m":
        name = args[2]
    elif len(args) >= 2 and os.path.basename(args[0]).startswith("python") and not args[1].startswith("-"):
        name = os.path.basename(args[1])
    else:
        name = os.path.basename(args[0]) if args else ""
    kept = "".join(ch for ch in name if not unicodedata.category(ch).startswith("C"))
    return (kept[: PROGRAM_CAP - 1] + "…" if len(kept) > PROGRAM_CAP else kept) or None


Subscription = tuple[int, Callable[[], None]]


class OpenWatch:
    """Opens, by any process, of the device nodes this process holds (Linux inotify): one instance
    for the whole process — a held port costs a watch, not a descriptor — read by one thread that
    runs only while some node is watched. ``add`` calls ``callback`` on that thread after each
    open of the node; ``remove`` stops it. ``shared()`` is None where inotify is not there."""

    _shared: ClassVar[OpenWatch | None] = None
    _made = False
    _make_lock = threading.Lock()

    def __init__(self, fd: int, libc: Any) -> None:
        self.fd = fd
        self._libc = libc
        self._lock = threading.Lock()
        self._subs: dict[int, list[Callable[[], None]]] = {}
        self._thread: threading.Thread | None = None
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    @classmethod
    def shared(cls) -> OpenWatch | None:
        with cls._make_lock:
            if not cls._made:
                cls._made = True
                cls._shared = cls._make()
            return cls._shared

    @classmethod
    def _make(cls) -> OpenWatch | None:
        made = _inotify()
        return None if made is None else cls(*made)

    def add(self, path: str, callback: Callable[[], None]) -> Subscription | None:
        with self._lock:
            wd = self._libc.inotify_add_watch(self.fd, os.fsencode(path), IN_OPEN)
            if wd < 0:
                return None
            self._subs.setdefault(wd, []).append(callback)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="node-open-watch", daemon=True)
                self._thread.start()
        return (wd, callback)

    def remove(self, sub: Subscription) -> None:
        wd, callback = sub
        with self._lock:
            callbacks = self._subs.get(wd, [])
            if callback in callbacks:
                callbacks.remove(callback)
            if not callbacks and self._subs.pop(wd, None) is not None:
                self._libc.inotify_rm_watch(self.fd, wd)
            if not self._subs:
                with contextlib.suppress(OSError):
                    os.write(self._wake_w, b"x")  # the thread ends: nothing left to watch

    def _run(self) -> None:
        while True:
            with contextlib.suppress(InterruptedError):
                select.select([self.fd, self._wake_r], [], [])
            with contextlib.suppress(OSError):
                os.read(self._wake_r, 512)
            with self._lock:
                if not self._subs:
                    self._thread = None
                    return
            for wd in self._opened():
                with self._lock:
                    callbacks = list(self._subs.get(wd, ()))
                for callback in callbacks:
                    try:
                        callback()
                    except Exception:
                        log.exception("reporting an open of a held port failed")

    def _opened(self) -> list[int]:
        """The watches whose node was opened, from the events queued now."""
        try:
            data = os.read(self.fd, 4096)
        except OSError:
            return []
        wds: list[int] = []
        for wd, mask in _events(data):
            if mask & IN_OPEN and wd not in wds:
                wds.append(wd)
        return wds
