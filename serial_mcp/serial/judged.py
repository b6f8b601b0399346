"""``JudgedPath``: a device path the allowlist has judged, with the file it was judged to be.

The guard resolves a name to its real path, judges that, and hands the opener this object instead
of the name, so the name is never looked up twice. ``SystemOpener`` pins the path without following
links, checks that it is still the judged device and inode, and opens that very file; a path swapped
in between is refused before anything is opened. ``device_of`` names the device a descriptor is
open on (real path and device number), which every reopen must find again.
"""

from __future__ import annotations

import os
import stat


class JudgedPath(str):
    """A ``str`` (so every opener takes it) carrying the ``(st_dev, st_ino)`` that was judged."""

    identity: tuple[int, int] | None

    def __new__(cls, real: str, identity: tuple[int, int] | None) -> JudgedPath:
        self = super().__new__(cls, real)
        self.identity = identity
        return self


DeviceId = tuple[str, int]  # (real path, st_rdev) of a character device


def device_of(fd: int | None, name: str) -> DeviceId | None:
    """The character device ``fd`` is open on: its real path (as the kernel names the open file,
    not a second lookup of ``name``) and device number; None for anything else (a socket)."""
    if fd is None:
        return None
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    if not stat.S_ISCHR(st.st_mode):
        return None
    try:
        real = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        real = os.path.realpath(name)
    return (real, st.st_rdev)
