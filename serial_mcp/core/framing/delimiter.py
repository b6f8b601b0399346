"""Delimiter framing: frames end with an arbitrary byte string, optionally carrying a checksum."""

from __future__ import annotations

from dataclasses import dataclass

from serial_mcp import messages
from serial_mcp.core.framing.base import DEFAULT_MAX_LENGTH, Frame, FrameEvent, FramingError
from serial_mcp.core.framing.checksum import ChecksumSpec, checked
from serial_mcp.core.framing.separated import SeparatorDecoder


class DelimiterDecoder(SeparatorDecoder):
    """Cuts the stream after every ``delimiter``; checks a trailing checksum when configured."""

    __slots__ = ("_checksum", "_include", "_skip_empty")

    def __init__(
        self,
        delimiter: bytes,
        include_terminators: bool = False,
        skip_empty: bool = False,
        checksum: ChecksumSpec | None = None,
        offset: int = 0,
        max_length: int = DEFAULT_MAX_LENGTH,
    ) -> None:
        if not delimiter:
            raise ValueError("delimiter must not be empty")
        super().__init__(delimiter, offset=offset, max_length=max_length)
        self._include = include_terminators
        self._skip_empty = skip_empty
        self._checksum = checksum

    def _cut(self, piece: bytes, start: int, end: int, term: bytes) -> FrameEvent | None:
        if self._skip_empty and not piece:
            return None
        data, valid, detail = checked(self._checksum, piece)
        if self._include:
            data = piece + term
        return Frame(data, start, end, valid, detail)

    def _tail(self, piece: bytes, start: int) -> FrameEvent | None:
        if len(piece) > self.max_length:
            return FramingError(messages.FRAMING_TOO_LONG.format(max_length=self.max_length), start)
        return self._cut(piece, start, start + len(piece), b"")


@dataclass(frozen=True, slots=True)
class DelimiterEncoder:
    """Appends the checksum (if any) and the delimiter to each payload."""

    delimiter: bytes
    checksum: ChecksumSpec | None = None

    def encode(self, payload: bytes) -> bytes:
        """``payload`` [+ checksum] + delimiter."""
        if self.checksum is not None:
            payload = self.checksum.append(payload)
        return payload + self.delimiter
