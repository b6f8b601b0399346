"""The buffer-and-resync helper every incremental framing decoder shares (after h11's ``_receivebuffer``).

A decoder keeps the bytes it could not decide on yet in a :class:`ReceiveBuffer`, together with
the absolute stream offset of the first of them (``base``, which is the decoder's
``pending_start``). Feeding joins the kept bytes with the new ones into one ``bytes`` "work"
string the decoder scans at C speed; whatever the decoder cannot decide on is handed back with
:meth:`ReceiveBuffer.keep`. Bytes that belong to no frame are counted in ``skipped``, so no
byte is lost silently.

It also holds the one copy of "discard through the next terminator" that separator-based
decoders use after an over-long frame (:meth:`ReceiveBuffer.discard_through`).
"""

from __future__ import annotations

from collections.abc import Callable

#: ``find(buffer, start) -> (index, length)`` of the next terminator in ``buffer``, or None.
Finder = Callable[[bytearray, int], "tuple[int, int] | None"]


def as_bytes(data: bytes | bytearray | memoryview) -> bytes:
    """``data`` as ``bytes`` (a bytearray or memoryview would leak into ``Frame.data``)."""
    return data if type(data) is bytes else bytes(data)


class ReceiveBuffer:
    """Undecided bytes, their absolute offset, and how many bytes were skipped as no frame."""

    __slots__ = ("base", "buf", "need", "scan", "skipped")

    def __init__(self, offset: int = 0) -> None:
        self.buf = bytearray()
        self.base = offset  # absolute offset of buf[0]
        self.scan = 0  # where the next terminator search in buf may start
        self.need = 0  # the decoder cannot progress before buf holds this many bytes
        self.skipped = 0  # bytes given up on as not part of any frame

    def __len__(self) -> int:
        return len(self.buf)

    def reset(self, offset: int) -> None:
        """Drop the undecided bytes (after a gap); the next byte fed is at absolute ``offset``."""
        self.buf.clear()
        self.base = offset
        self.scan = 0
        self.need = 0

    def absorb(self, data: bytes) -> bytes | None:
        """The kept bytes followed by ``data`` as one work string (the buffer is emptied),
        or None when the buffer still holds fewer than ``need`` bytes (``data`` is kept)."""
        buf = self.buf
        if not buf:
            return data
        buf += data
        if len(buf) < self.need:
            return None
        work = bytes(buf)
        buf.clear()
        return work

    def keep(self, work: bytes, done: int, need: int = 0) -> None:
        """After scanning ``work`` (which began at ``base``): bytes before ``done`` are decided
        (emitted or counted as skipped), the rest is kept until ``need`` bytes are buffered."""
        self.base += done
        if done < len(work):
            self.buf += work[done:] if done else work
        self.need = need

    def skip(self, count: int) -> None:
        """Count ``count`` bytes as belonging to no frame."""
        self.skipped += count

    def discard_through(self, data: bytes, find: Finder, keep_tail: int) -> bytes | None:
        """Drop bytes up to and including the next terminator (after an over-long frame).

        Returns what follows the terminator, or None when ``data`` holds none yet (then only
        the last ``keep_tail`` bytes, a possible partial terminator, are kept).
        """
        buf = self.buf
        buf += data
        hit = find(buf, 0)
        if hit is None:
            keep = min(len(buf), keep_tail)
            self.base += len(buf) - keep
            del buf[: len(buf) - keep]
            return None
        i, k = hit
        self.base += i + k
        rest = bytes(buf[i + k :])
        buf.clear()
        return rest


class BufferedDecoder:
    """A decoder whose undecided bytes wait in a :class:`ReceiveBuffer` (separator-based, start_end,
    scan-based): where its next frame may start is the buffer's ``base``."""

    __slots__ = ("_rx",)

    def __init__(self, offset: int) -> None:
        self._rx = ReceiveBuffer(offset)

    @property
    def pending_start(self) -> int:
        """Absolute offset of the first byte not yet emitted as (or skipped past) a frame."""
        return self._rx.base
