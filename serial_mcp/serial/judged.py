"""``JudgedPath``: a device path the allowlist has judged, with the file it was judged to be.

The guard resolves a name to its real path, judges that, and hands the opener this object instead
of the name, so the name is never looked up twice. ``SystemOpener`` pins the path without following
links, checks that it is still the judged device and inode, and opens that very file; a path swapped
in between is refused before anything is opened.
"""

from __future__ import annotations


class JudgedPath(str):
    """A ``str`` (so every opener takes it) carrying the ``(st_dev, st_ino)`` that was judged."""

    identity: tuple[int, int] | None

    def __new__(cls, real: str, identity: tuple[int, int] | None) -> JudgedPath:
        self = super().__new__(cls, real)
        self.identity = identity
        return self
