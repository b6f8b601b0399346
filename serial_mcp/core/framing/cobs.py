"""COBS framing (Consistent Overhead Byte Stuffing), frames delimited by 0x00.

Standard streams ``enc 00 enc 00`` decode every frame; a leading 00 (or repeated 00s)
is accepted and ignored, since an empty chunk cannot be a COBS frame. Decoding walks
code blocks (not bytes) and copies each block with one slice.
"""

from __future__ import annotations

from serial_mcp import messages
from serial_mcp.core.framing.base import (
    DEFAULT_MAX_LENGTH,
    Frame,
    FrameDecodeError,
    FrameEvent,
    FramingError,
)
from serial_mcp.core.framing.separated import SeparatorDecoder

_ZERO = b"\x00"


def encode(raw: bytes) -> bytes:
    """COBS-encode ``raw`` (without the trailing 0x00 delimiter)."""
    out = bytearray()
    parts = raw.split(_ZERO)
    last = len(parts) - 1
    for index, part in enumerate(parts):
        pos = 0
        while len(part) - pos >= 254:
            out.append(0xFF)
            out += part[pos : pos + 254]
            pos += 254
        if index == last and pos and pos == len(part):
            break  # a full 0xFF block ends the data: no trailing code byte needed
        out.append(len(part) - pos + 1)
        out += part[pos:]
    return bytes(out)


def _decode(encoded: bytes) -> bytes | str:
    """The decoded bytes, or an error message (a ``str``) for a malformed frame."""
    if _ZERO in encoded:
        return messages.FRAMING_COBS_ZERO
    if not encoded:
        return messages.FRAMING_COBS_EMPTY
    n = len(encoded)
    if encoded[0] == n and n < 0xFF:  # the common case: one block, no zero inside
        return encoded[1:]
    blocks: list[bytes] = []
    i = 0
    while i < n:
        code = encoded[i]
        nxt = i + code
        if nxt > n:
            return messages.FRAMING_COBS_TRUNCATED.format(code=code, position=i)
        blocks.append(encoded[i + 1 : nxt])
        if code != 0xFF and nxt < n:
            blocks.append(_ZERO)
        i = nxt
    return b"".join(blocks)


def decode(encoded: bytes) -> bytes:
    """Decode one COBS frame (without its 0x00 delimiter); raises FrameDecodeError."""
    result = _decode(encoded)
    if isinstance(result, str):
        raise FrameDecodeError(result)
    return result


class CobsDecoder(SeparatorDecoder):
    """Incremental COBS decoder; ``include_terminators`` returns the raw encoded frame + 0x00."""

    __slots__ = ("_include", "_skip_empty")

    def __init__(
        self,
        include_terminators: bool = False,
        skip_empty: bool = False,
        offset: int = 0,
        max_length: int = DEFAULT_MAX_LENGTH,
    ) -> None:
        super().__init__(_ZERO, offset=offset, max_length=max_length)
        self._include = include_terminators
        self._skip_empty = skip_empty

    def _cut(self, piece: bytes, start: int, end: int, term: bytes) -> FrameEvent | None:
        if not piece:
            return None  # leading or repeated 00: no frame there
        result = _decode(piece)
        if isinstance(result, str):
            return FramingError(result, start)
        if self._skip_empty and not result:
            return None
        return Frame(piece + term if self._include else result, start, end)


class CobsEncoder:
    """Encodes each payload as one COBS frame followed by 0x00."""

    __slots__ = ()

    def encode(self, payload: bytes) -> bytes:
        """COBS(payload) + 0x00."""
        return encode(payload) + _ZERO
