"""SLIP framing (RFC 1055): END-terminated packets with ESC byte stuffing.

The stream decoder splits on END with ``bytes.split`` and unescapes each packet with two
``bytes.replace`` calls; empty packets (repeated END bytes, the leading END many senders
put before each packet) are ignored, as RFC 1055 recommends. A packet with an invalid
escape becomes a FramingError and never poisons its neighbours.
"""

from __future__ import annotations

import re
from typing import Final

from serial_mcp import messages
from serial_mcp.core.framing.base import (
    DEFAULT_MAX_LENGTH,
    Frame,
    FrameDecodeError,
    FrameEvent,
    FramingError,
)
from serial_mcp.core.framing.separated import SeparatorDecoder

END: Final = b"\xc0"
ESC: Final = b"\xdb"
ESC_END: Final = b"\xdc"
ESC_ESC: Final = b"\xdd"

_BAD_ESCAPE = re.compile(rb"\xdb(?![\xdc\xdd])")


def encode(message: bytes) -> bytes:
    """One SLIP packet: END + escaped message + END (the leading END flushes line noise)."""
    return END + message.replace(ESC, ESC + ESC_ESC).replace(END, ESC + ESC_END) + END


def _unescape(packet: bytes) -> bytes | None:
    """The message inside an escaped packet body, or None for an invalid escape."""
    if ESC not in packet:
        return packet
    if _BAD_ESCAPE.search(packet):
        return None
    return packet.replace(ESC + ESC_END, END).replace(ESC + ESC_ESC, ESC)


def decode(packet: bytes) -> bytes:
    """The message of one complete packet (leading/trailing END optional); raises FrameDecodeError."""
    body = packet.strip(END)
    if END in body:
        raise FrameDecodeError(messages.FRAMING_SLIP_END_INSIDE)
    message = _unescape(body)
    if message is None:
        raise FrameDecodeError(messages.FRAMING_SLIP_BAD_ESCAPE)
    return message


class SlipDecoder(SeparatorDecoder):
    """Incremental SLIP decoder; ``include_terminators`` returns the raw escaped packet + END."""

    __slots__ = ("_include",)

    def __init__(
        self, include_terminators: bool = False, offset: int = 0, max_length: int = DEFAULT_MAX_LENGTH
    ) -> None:
        super().__init__(END, offset=offset, max_length=max_length)
        self._include = include_terminators

    def _cut(self, piece: bytes, start: int, end: int, term: bytes) -> FrameEvent | None:
        if not piece:
            return None
        message = _unescape(piece)
        if message is None:
            return FramingError(messages.FRAMING_SLIP_BAD_ESCAPE, start)
        return Frame(piece + term if self._include else message, start, end)


class SlipEncoder:
    """Encodes each payload as one SLIP packet."""

    __slots__ = ()

    def encode(self, payload: bytes) -> bytes:
        """END + escaped payload + END."""
        return encode(payload)
