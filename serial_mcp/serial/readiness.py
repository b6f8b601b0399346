"""Waiting for descriptors to be ready: ``poll``, not ``select``, whose 1024-descriptor ceiling a lab host
with a hundred ports open passes (issue 40.5)."""

from __future__ import annotations

import select

_READABLE = select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR
_WRITABLE = select.POLLOUT | select.POLLHUP | select.POLLERR


def wait_ready(readers: tuple[int, ...], writers: tuple[int, ...], timeout: float | None) -> set[int]:
    """The descriptors of ``readers`` that can be read and of ``writers`` that can be written (or that
    hung up or failed: the read or write says how), waiting up to ``timeout`` seconds (None: no bound).
    ``poll``, not ``select``: a host with a hundred ports holds descriptors past select's 1024."""
    poller = select.poll()
    for fd in readers:
        poller.register(fd, select.POLLIN | select.POLLPRI)
    for fd in writers:
        poller.register(fd, select.POLLOUT)
    found = poller.poll(None if timeout is None else max(0, int(timeout * 1000 + 0.999)))
    return {fd for fd, mask in found if mask & (_READABLE if fd in readers else _WRITABLE)}
