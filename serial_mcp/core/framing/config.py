"""Build decoders and encoders from the JSON-shaped ``rx_framing`` / ``tx_framing`` objects.

Every field is validated; unknown keys are refused with the closest valid name, so an
agent's typo (``endian`` for ``endianness``) is reported instead of silently ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Literal

from serial_mcp import messages
from serial_mcp.core.encoding import ENCODINGS, decode_input
from serial_mcp.core.framing.base import DEFAULT_MAX_LENGTH, FrameDecoder, FrameEncoder
from serial_mcp.core.framing.binary import BinaryDecoder, BinaryEncoder
from serial_mcp.core.framing.binary_config import BINARY_KEYS, parse_binary
from serial_mcp.core.framing.checksum import ChecksumSpec, parse_checksum
from serial_mcp.core.framing.cobs import CobsDecoder, CobsEncoder
from serial_mcp.core.framing.delimiter import DelimiterDecoder, DelimiterEncoder
from serial_mcp.core.framing.gnss import GnssDecoder, NmeaLineDecoder, UbxEncoder, rtcm3_decoder, ubx_decoder
from serial_mcp.core.framing.length_prefixed import (
    DEFAULT_MAX_PREFIXED,
    LengthPrefixedDecoder,
    LengthPrefixedEncoder,
)
from serial_mcp.core.framing.line import LineDecoder, LineEncoder
from serial_mcp.core.framing.modbus_rtu import ModbusRtuDecoder, ModbusRtuEncoder
from serial_mcp.core.framing.options import Options
from serial_mcp.core.framing.slip import SlipDecoder, SlipEncoder
from serial_mcp.core.framing.start_end import StartEndDecoder, StartEndEncoder
from serial_mcp.core.parsers.modbus_ascii import ModbusAsciiEncoder
from serial_mcp.core.parsers.nmea import NmeaEncoder
from serial_mcp.errors import InvalidArgument

_COMMON_RX = ("include_terminators", "skip_empty", "max_length")
_RX_KEYS: Final[dict[str, tuple[str, ...]]] = {
    "line": ("type", "ending", *_COMMON_RX),
    "delimiter": ("type", "delimiter", "encoding", "checksum", *_COMMON_RX),
    "length_prefixed": ("type", "prefix_size", "endianness", "header_offset", "checksum", *_COMMON_RX),
    "start_end": ("type", "start", "end", "encoding", "checksum", *_COMMON_RX),
    "slip": ("type", "include_terminators", "max_length"),
    "cobs": ("type", *_COMMON_RX),
    "binary": ("type", *BINARY_KEYS, "include_terminators", "skip_empty"),
    "ubx": ("type",),
    "rtcm3": ("type",),
    "gnss": ("type",),
    "modbus_rtu": ("type", "include_terminators", "reply_to"),
    "nmea": ("type", *_COMMON_RX),
}
_TX_KEYS: Final[dict[str, tuple[str, ...]]] = {
    "line": ("type", "ending"),
    "delimiter": ("type", "delimiter", "encoding", "checksum"),
    "length_prefixed": ("type", "prefix_size", "endianness", "header_offset", "max_length", "checksum"),
    "start_end": ("type", "start", "end", "encoding", "checksum"),
    "slip": ("type",),
    "cobs": ("type",),
    "nmea": ("type",),
    "modbus_ascii": ("type",),
    "binary": ("type", *BINARY_KEYS),
    "ubx": ("type",),
    "modbus_rtu": ("type",),
}
RX_FRAMING_TYPES: Final = tuple(_RX_KEYS)
TX_FRAMING_TYPES: Final = tuple(_TX_KEYS)

_MAX_SEPARATED = 1 << 26
_MAX_PREFIXED = (1 << 32) - 1


def _open(raw: object, field: str, keys: dict[str, tuple[str, ...]]) -> tuple[Options, str]:
    """Read ``type`` and refuse keys that type does not know."""
    opts = Options(raw, field)
    if "type" not in opts:  # report a misspelt 'type' key before asking for it
        opts.check_keys(sorted({key for allowed in keys.values() for key in allowed}))
    kind = opts.choice("type", tuple(keys))
    opts.check_keys(keys[kind], context=messages.OPTIONS_FOR_TYPE.format(type=kind))
    return opts, kind


def _encoded(opts: Options, key: str, default: str | None) -> bytes:
    """A string option turned into bytes under the object's ``encoding`` (utf8, hex, base64)."""
    encoding = opts.choice("encoding", ENCODINGS, "utf8")
    value = decode_input(opts.string(key, default), encoding, field=f"{opts.field}.{key}")
    if not value:
        raise InvalidArgument(messages.OPTIONS_BAD_STRING.format(field=opts.field, key=key, value="''"))
    return value


def _markers(opts: Options) -> list[bytes]:
    encoding = opts.choice("encoding", ENCODINGS, "utf8")
    markers = [decode_input(s, encoding, field=f"{opts.field}.start") for s in opts.string_list("start", ())]
    if not markers or not all(markers):
        raise InvalidArgument(
            messages.OPTIONS_BAD_STRING_LIST.format(field=opts.field, key="start", value=opts.raw("start"))
        )
    return markers


def _checksum(opts: Options) -> ChecksumSpec | None:
    raw = opts.raw("checksum")
    return None if raw is None else parse_checksum(raw, f"{opts.field}.checksum")


def _endianness(opts: Options) -> Literal["big", "little"]:
    return "little" if opts.choice("endianness", ("big", "little"), "big") == "little" else "big"


def _prefix_layout(opts: Options) -> dict[str, Any]:
    """The length-prefixed layout, the same for RX and TX."""
    return {
        "prefix_size": opts.choice_int("prefix_size", (1, 2, 4), 2),
        "endianness": _endianness(opts),
        "header_offset": opts.integer("header_offset", 0, 0, 1024),
        "max_length": opts.integer("max_length", DEFAULT_MAX_PREFIXED, 0, _MAX_PREFIXED),
    }


def build_decoder(rx_framing: object, offset: int = 0, *, field: str = "rx_framing") -> FrameDecoder:
    """A fresh decoder for ``rx_framing`` whose first byte will be at absolute ``offset``."""
    opts, kind = _open(rx_framing, field, _RX_KEYS)
    include = opts.boolean("include_terminators", False)
    scanned = _scanned(opts, kind, include, offset)
    if scanned is not None:
        return scanned
    common: dict[str, Any] = {
        "include_terminators": include,
        "skip_empty": opts.boolean("skip_empty", False),
        "offset": offset,
    }
    if kind == "length_prefixed":
        return LengthPrefixedDecoder(**_prefix_layout(opts), checksum=_checksum(opts), **common)
    common["max_length"] = opts.integer("max_length", DEFAULT_MAX_LENGTH, 1, _MAX_SEPARATED)
    if kind == "line":
        return LineDecoder(ending=opts.choice("ending", ("auto", "lf", "cr", "crlf"), "auto"), **common)
    if kind == "delimiter":
        return DelimiterDecoder(_encoded(opts, "delimiter", None), checksum=_checksum(opts), **common)
    if kind == "start_end":
        markers = _markers(opts)
        return StartEndDecoder(markers, _encoded(opts, "end", "\r\n"), checksum=_checksum(opts), **common)
    if kind == "slip":
        return SlipDecoder(include_terminators=include, offset=offset, max_length=common["max_length"])
    return CobsDecoder(**common)


def reply_framing(rx_framing: object, request: bytes) -> object:
    """The RX framing of a transact that sent ``request``: Modbus RTU's gains ``reply_to`` (its reply's
    length then follows from the request's function); any other framing is returned as it is."""
    if (
        isinstance(rx_framing, dict)
        and rx_framing.get("type") == "modbus_rtu"
        and "reply_to" not in rx_framing
        and len(request) >= 2
    ):
        return {**rx_framing, "reply_to": request.hex()}
    return rx_framing


def _request(opts: Options) -> bytes:
    """``reply_to`` of ``modbus_rtu``: the request a transact sent (hex, at least address and function)."""
    if "reply_to" not in opts:
        return b""
    text = opts.string("reply_to", None)
    try:
        request = bytes.fromhex(text)
    except ValueError:
        request = b""
    if len(request) < 2:
        raise InvalidArgument(messages.FRAMING_REPLY_TO.format(value=text[:40]), field="rx_framing.reply_to")
    return request


def _scanned(opts: Options, kind: str, include: bool, offset: int) -> FrameDecoder | None:
    """The decoders built on the sync-scanning engine (and resynchronising NMEA lines)."""
    if kind == "binary":
        layout = parse_binary(opts, include_terminators=include, skip_empty=opts.boolean("skip_empty", False))
        return BinaryDecoder(layout, offset)
    if kind == "ubx":
        return ubx_decoder(offset)
    if kind == "rtcm3":
        return rtcm3_decoder(offset)
    if kind == "gnss":
        return GnssDecoder(offset)
    if kind == "modbus_rtu":
        return ModbusRtuDecoder(include, offset, _request(opts))
    if kind == "nmea":
        return NmeaLineDecoder(
            include_terminators=include,
            skip_empty=opts.boolean("skip_empty", True),
            offset=offset,
            max_length=opts.integer("max_length", DEFAULT_MAX_LENGTH, 1, _MAX_SEPARATED),
        )
    return None


def _tx_line(opts: Options) -> FrameEncoder:
    if opts.raw("ending") == "auto":
        raise InvalidArgument(messages.FRAMING_TX_AUTO.format(field=opts.field), field=f"{opts.field}.ending")
    return LineEncoder(opts.choice("ending", ("lf", "cr", "crlf"), "lf"))


_TX_BUILDERS: Final[dict[str, Callable[[Options], FrameEncoder]]] = {
    "line": _tx_line,
    "delimiter": lambda o: DelimiterEncoder(_encoded(o, "delimiter", None), _checksum(o)),
    "length_prefixed": lambda o: LengthPrefixedEncoder(**_prefix_layout(o), checksum=_checksum(o)),
    "start_end": lambda o: StartEndEncoder(_markers(o)[0], _encoded(o, "end", "\r\n"), _checksum(o)),
    "slip": lambda o: SlipEncoder(),
    "cobs": lambda o: CobsEncoder(),
    "nmea": lambda o: NmeaEncoder(),
    "modbus_ascii": lambda o: ModbusAsciiEncoder(),
    "binary": lambda o: BinaryEncoder(parse_binary(o)),
    "ubx": lambda o: UbxEncoder(),
    "modbus_rtu": lambda o: ModbusRtuEncoder(),
}


def build_encoder(tx_framing: object, *, field: str = "tx_framing") -> FrameEncoder:
    """The encoder for ``tx_framing``."""
    opts, kind = _open(tx_framing, field, _TX_KEYS)
    return _TX_BUILDERS[kind](opts)


def check_tx_framing(tx_framing: object, *, field: str = "tx_framing") -> None:
    """Validate ``tx_framing`` completely (InvalidArgument naming the bad key) without encoding
    anything, so a framing whose payloads have a minimum size is not refused for a dummy one."""
    if tx_framing is not None:
        build_encoder(tx_framing, field=field)
