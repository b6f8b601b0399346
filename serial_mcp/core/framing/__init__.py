"""Framing codecs: cut a byte stream into frames (RX) and wrap payloads for the wire (TX).

Sans-IO in the style of h11/wsproto: decoders are incremental state machines fed with bytes
that return :class:`Frame` / :class:`FramingError` events with absolute stream offsets;
any chunking of the same bytes yields the same events. Build them from the JSON-shaped
``rx_framing`` / ``tx_framing`` objects with :func:`build_decoder` / :func:`build_encoder`.
"""

from serial_mcp.core.framing.base import (
    DEFAULT_MAX_LENGTH,
    Frame,
    FrameDecodeError,
    FrameDecoder,
    FrameEncoder,
    FrameEvent,
    FramingError,
)
from serial_mcp.core.framing.checksum import ChecksumSpec
from serial_mcp.core.framing.cobs import CobsDecoder, CobsEncoder
from serial_mcp.core.framing.config import RX_FRAMING_TYPES, TX_FRAMING_TYPES, build_decoder, build_encoder
from serial_mcp.core.framing.delimiter import DelimiterDecoder, DelimiterEncoder
from serial_mcp.core.framing.length_prefixed import LengthPrefixedDecoder, LengthPrefixedEncoder
from serial_mcp.core.framing.line import LineDecoder, LineEncoder
from serial_mcp.core.framing.slip import SlipDecoder, SlipEncoder
from serial_mcp.core.framing.start_end import StartEndDecoder, StartEndEncoder

__all__ = [
    "DEFAULT_MAX_LENGTH",
    "RX_FRAMING_TYPES",
    "TX_FRAMING_TYPES",
    "ChecksumSpec",
    "CobsDecoder",
    "CobsEncoder",
    "DelimiterDecoder",
    "DelimiterEncoder",
    "Frame",
    "FrameDecodeError",
    "FrameDecoder",
    "FrameEncoder",
    "FrameEvent",
    "FramingError",
    "LengthPrefixedDecoder",
    "LengthPrefixedEncoder",
    "LineDecoder",
    "LineEncoder",
    "SlipDecoder",
    "SlipEncoder",
    "StartEndDecoder",
    "StartEndEncoder",
    "build_decoder",
    "build_encoder",
]
