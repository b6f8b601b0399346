"""The engine shared by separator-based framings (line, delimiter, SLIP, COBS).

Cuts the stream at every occurrence of a fixed separator with ``bytes.split`` (C speed),
keeps only the unterminated tail between feeds, and hands each piece to ``_cut``.
A frame longer than ``max_length`` becomes one FramingError at its start and is skipped
through its separator, whether it arrived whole or in pieces.
"""

from __future__ import annotations

from serial_mcp import messages
from serial_mcp.core.framing._receivebuffer import BufferedDecoder, as_bytes
from serial_mcp.core.framing.base import FrameEvent, FramingError


class SeparatorDecoder(BufferedDecoder):
    """Base decoder: subclasses implement ``_cut`` (piece -> event or None)."""

    __slots__ = ("_discarding", "_sep", "max_length")

    def __init__(self, separator: bytes, *, offset: int, max_length: int) -> None:
        super().__init__(offset)  # the unterminated tail, its offset and search position
        self._sep = separator
        self._discarding = False  # skipping an overlong frame up to its separator
        self.max_length = max_length

    def reset(self, offset: int) -> None:
        """Drop partial state; the next byte fed is at absolute ``offset``."""
        self._rx.reset(offset)
        self._discarding = False

    def tail(self) -> bytes:
        """The unterminated bytes held now (a parser judges them when the line goes quiet)."""
        return b"" if self._discarding else bytes(self._rx.buf)

    def _find_separator(self, buf: bytearray, start: int) -> tuple[int, int] | None:
        i = buf.find(self._sep, start)
        return None if i < 0 else (i, len(self._sep))

    def _cut(self, piece: bytes, start: int, end: int, term: bytes) -> FrameEvent | None:
        """Turn one separated piece (``term`` is its separator, or b'' at end of stream) into an event."""
        raise NotImplementedError

    def _tail(self, piece: bytes, start: int) -> FrameEvent | None:
        """What an unterminated piece at end of stream becomes (default: nothing).

        The piece may exceed ``max_length`` by up to ``len(separator) - 1`` bytes; check it.
        """
        return None

    def feed(self, data: bytes) -> list[FrameEvent]:
        """Consume ``data``; return the frames and errors it completes."""
        out: list[FrameEvent] = []
        if not data:
            return out
        data = as_bytes(data)
        sep = self._sep
        k = len(sep)
        rx = self._rx
        buf = rx.buf
        if self._discarding:
            rest = rx.discard_through(data, self._find_separator, k - 1)
            if rest is None:
                return out
            work = rest
            self._discarding = False
        elif buf:
            buf += data
            if buf.find(sep, rx.scan) < 0:
                rx.scan = max(0, len(buf) - k + 1)
                self._check_overflow(out)
                return out
            work = bytes(buf)
            buf.clear()
            rx.scan = 0
        else:
            work = data
        if work:
            self._split(work, out)
        return out

    def _split(self, work: bytes, out: list[FrameEvent]) -> None:
        """Emit every complete piece of ``work`` (which starts at ``_base``) and keep the tail."""
        sep = self._sep
        k = len(sep)
        pieces = work.split(sep)
        rest = pieces.pop()
        rx = self._rx
        pos = rx.base
        limit = self.max_length
        cut = self._cut
        for piece in pieces:
            end = pos + len(piece) + k
            if len(piece) > limit:
                out.append(FramingError(messages.FRAMING_TOO_LONG.format(max_length=limit), pos))
            else:
                event = cut(piece, pos, end, sep)
                if event is not None:
                    out.append(event)
            pos = end
        rx.base = pos
        if rest:
            rx.buf += rest
            rx.scan = max(0, len(rest) - k + 1)
            self._check_overflow(out)

    def _check_overflow(self, out: list[FrameEvent]) -> None:
        """Give up on an unterminated frame that is already longer than ``max_length``."""
        rx = self._rx
        buf = rx.buf
        keep = len(self._sep) - 1  # trailing bytes that may start a separator
        if len(buf) - keep > self.max_length:
            out.append(FramingError(messages.FRAMING_TOO_LONG.format(max_length=self.max_length), rx.base))
            rx.base += len(buf) - keep
            del buf[: len(buf) - keep]
            rx.scan = 0
            self._discarding = True

    def flush(self) -> list[FrameEvent]:
        """End of stream: hand the unterminated tail to ``_tail`` and consume it."""
        rx = self._rx
        event = None
        if rx.buf and not self._discarding:
            event = self._tail(bytes(rx.buf), rx.base)
        self.reset(rx.base + len(rx.buf))
        return [event] if event is not None else []
