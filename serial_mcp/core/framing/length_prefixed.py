"""Length-prefixed framing: ``[header_offset bytes][length: prefix_size bytes][length bytes]``.

``data`` is the frame without its length prefix (header bytes kept, checksum removed). The
length counts the bytes after the prefix, checksum included. A declared checksum covers
everything before it (header, prefix and payload). A length above ``max_length`` means the
stream is out of step: one FramingError is reported and the decoder slides one byte at a
time until a plausible length appears (further bad lengths in the same run are not
reported again until a frame decodes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from serial_mcp import messages
from serial_mcp.core.framing.base import Frame, FrameEvent, FramingError
from serial_mcp.core.framing.checksum import ChecksumSpec, checked
from serial_mcp.errors import InvalidArgument

DEFAULT_MAX_PREFIXED = 65536


class LengthPrefixedDecoder:
    """Incremental decoder for length-prefixed frames."""

    __slots__ = (
        "_base",
        "_buf",
        "_checksum",
        "_endianness",
        "_header",
        "_include",
        "_need",
        "_prefix",
        "_resyncing",
        "_skip_empty",
        "max_length",
    )

    def __init__(
        self,
        prefix_size: int = 2,
        endianness: Literal["big", "little"] = "big",
        header_offset: int = 0,
        max_length: int = DEFAULT_MAX_PREFIXED,
        include_terminators: bool = False,
        skip_empty: bool = False,
        checksum: ChecksumSpec | None = None,
        offset: int = 0,
    ) -> None:
        self._prefix = prefix_size
        self._endianness: Literal["big", "little"] = endianness
        self._header = header_offset
        self.max_length = max_length
        self._include = include_terminators
        self._skip_empty = skip_empty
        self._checksum = checksum
        self._buf = bytearray()
        self._base = offset
        self._need = header_offset + prefix_size  # bytes _buf must hold before anything can progress
        self._resyncing = False

    @property
    def pending_start(self) -> int:
        """Absolute offset of the first byte not yet emitted as (or skipped past) a frame."""
        return self._base

    def reset(self, offset: int) -> None:
        """Drop partial state; the next byte fed is at absolute ``offset``."""
        self._buf.clear()
        self._base = offset
        self._need = self._header + self._prefix
        self._resyncing = False

    def flush(self) -> list[FrameEvent]:
        """End of stream: a truncated frame is dropped."""
        self.reset(self._base + len(self._buf))
        return []

    def feed(self, data: bytes) -> list[FrameEvent]:
        """Consume ``data``; return the frames and errors it completes."""
        out: list[FrameEvent] = []
        if type(data) is not bytes:  # a bytearray/memoryview would leak into Frame.data
            data = bytes(data)
        buf = self._buf
        if buf:
            buf += data
            if len(buf) < self._need:
                return out
            work = bytes(buf)
            buf.clear()
        else:
            work = data
        if len(work) < self._need:
            buf += work
            return out
        self._process(work, out)
        return out

    def _process(self, work: bytes, out: list[FrameEvent]) -> None:
        h = self._header
        hp = h + self._prefix
        n = len(work)
        base = self._base
        limit = self.max_length
        order = self._endianness
        pos = 0
        need = hp
        while n - pos >= hp:
            length = int.from_bytes(work[pos + h : pos + hp], order)
            if length > limit:
                if not self._resyncing:
                    self._resyncing = True
                    message = messages.FRAMING_LENGTH_TOO_BIG.format(length=length, max_length=limit)
                    out.append(FramingError(message, base + pos))
                pos += 1
                continue
            stop = pos + hp + length
            if stop > n:
                need = hp + length
                break
            self._resyncing = False
            event = self._frame(work[pos:stop], base + pos, base + stop)
            if event is not None:
                out.append(event)
            pos = stop
        self._base = base + pos
        if pos < n:
            self._buf += work[pos:]
        self._need = need

    def _frame(self, raw: bytes, start: int, end: int) -> Frame | None:
        h = self._header
        hp = h + self._prefix
        if self._skip_empty and len(raw) == hp:
            return None
        covered, valid, detail = checked(self._checksum, raw)
        data = raw if self._include else covered[:h] + covered[hp:]
        return Frame(data, start, end, valid, detail)


@dataclass(frozen=True, slots=True)
class LengthPrefixedEncoder:
    """Builds ``header + length + payload [+ checksum]`` from ``header + payload``."""

    prefix_size: int = 2
    endianness: Literal["big", "little"] = "big"
    header_offset: int = 0
    max_length: int = DEFAULT_MAX_PREFIXED
    checksum: ChecksumSpec | None = None

    def encode(self, payload: bytes) -> bytes:
        """The framed bytes; raises InvalidArgument when the payload cannot be framed."""
        h = self.header_offset
        if len(payload) < h:
            message = messages.FRAMING_SHORTER_THAN_HEADER.format(length=len(payload), header_offset=h)
            raise InvalidArgument(message)
        body = payload[h:]
        length = len(body) + (self.checksum.size if self.checksum else 0)
        limit = min(self.max_length, (1 << (8 * self.prefix_size)) - 1)
        if length > limit:
            raise InvalidArgument(messages.FRAMING_PAYLOAD_TOO_LONG.format(length=length, limit=limit))
        raw = payload[:h] + length.to_bytes(self.prefix_size, self.endianness) + body
        return self.checksum.append(raw) if self.checksum else raw
