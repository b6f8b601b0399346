"""Validation of rx_framing / tx_framing objects: every bad field is named with what is allowed."""

from __future__ import annotations

from typing import Any

import pytest

from serial_mcp.core.framing import (
    RX_FRAMING_TYPES,
    TX_FRAMING_TYPES,
    CobsDecoder,
    DelimiterDecoder,
    LengthPrefixedDecoder,
    LineDecoder,
    SlipDecoder,
    StartEndDecoder,
    build_decoder,
    build_encoder,
)
from serial_mcp.errors import InvalidArgument


@pytest.mark.parametrize(
    ("config", "cls"),
    [
        ({"type": "line"}, LineDecoder),
        ({"type": "delimiter", "delimiter": ";"}, DelimiterDecoder),
        ({"type": "length_prefixed"}, LengthPrefixedDecoder),
        ({"type": "start_end", "start": "$"}, StartEndDecoder),
        ({"type": "slip"}, SlipDecoder),
        ({"type": "cobs"}, CobsDecoder),
    ],
)
def test_every_rx_type_builds(config: dict[str, Any], cls: type) -> None:
    decoder = build_decoder(config, 42)
    assert isinstance(decoder, cls)
    assert decoder.pending_start == 42


def test_type_lists() -> None:
    classic = {"line", "delimiter", "length_prefixed", "start_end", "slip", "cobs"}
    assert set(RX_FRAMING_TYPES) == classic | {"binary", "ubx", "rtcm3", "gnss", "modbus_rtu", "nmea"}
    assert set(TX_FRAMING_TYPES) == classic | {"nmea", "modbus_ascii", "binary", "ubx", "modbus_rtu"}


@pytest.mark.parametrize(
    ("config", "fragments"),
    [
        (
            {"type": "length_prefixed", "endian": "little"},
            ["unknown key 'endian' in rx_framing", "Did you mean 'endianness'?", "prefix_size"],
        ),
        ({"tpye": "line"}, ["unknown key 'tpye'", "Did you mean 'type'?"]),
        ({}, ["rx_framing.type is required", "line, delimiter"]),
        ({"type": "lines"}, ["rx_framing.type 'lines' is not known", "Did you mean 'line'?", "cobs"]),
        (
            {"type": "line", "ending": "CRLF"},
            ["rx_framing.ending 'CRLF'", "Did you mean 'crlf'?", "auto, lf, cr, crlf"],
        ),
        ({"type": "line", "skip_empty": "yes"}, ["rx_framing.skip_empty must be true or false"]),
        (
            {"type": "line", "include_terminators": 1},
            ["rx_framing.include_terminators must be true or false"],
        ),
        ({"type": "line", "max_length": 0}, ["rx_framing.max_length must be a whole number from 1"]),
        ({"type": "length_prefixed", "prefix_size": 3}, ["rx_framing.prefix_size", "1, 2, 4"]),
        ({"type": "length_prefixed", "prefix_size": True}, ["rx_framing.prefix_size"]),
        ({"type": "length_prefixed", "header_offset": -1}, ["rx_framing.header_offset"]),
        ({"type": "delimiter"}, ["rx_framing.delimiter is required"]),
        ({"type": "delimiter", "delimiter": ""}, ["rx_framing.delimiter must be a non-empty string"]),
        (
            {"type": "delimiter", "delimiter": "zz", "encoding": "hex"},
            ["rx_framing.delimiter is not valid hex"],
        ),
        (
            {"type": "delimiter", "delimiter": ";", "encoding": "ascii"},
            ["rx_framing.encoding 'ascii'", "utf8, hex"],
        ),
        ({"type": "start_end"}, ["rx_framing.start is required"]),
        (
            {"type": "start_end", "start": ["$", ""]},
            ["rx_framing.start must be a non-empty string or a list"],
        ),
        ({"type": "start_end", "start": "$", "end": 5}, ["rx_framing.end must be a non-empty string"]),
        ({"type": "slip", "skip_empty": True}, ["unknown key 'skip_empty'", "for type 'slip'"]),
        (
            {"type": "delimiter", "delimiter": ";", "checksum": {"algorithm": "crc16modbus", "width": 0}},
            ["rx_framing.checksum.width"],
        ),
        (
            {"type": "delimiter", "delimiter": ";", "checksum": {"algo": "xor"}},
            ["unknown key 'algo' in rx_framing.checksum", "Did you mean 'algorithm'?"],
        ),
        (
            {"type": "delimiter", "delimiter": ";", "checksum": {"algorithm": "xor", "position": "start"}},
            ["rx_framing.checksum.position 'start'", "end"],
        ),
        ({"type": "delimiter", "delimiter": ";", "checksum": {"algorithm": "crc16_modbs"}}, ["crc16_modbus"]),
        (
            {"type": "delimiter", "delimiter": ";", "checksum": "crc16"},
            ["rx_framing.checksum must be an object"],
        ),
        ("line", ["rx_framing must be an object"]),
    ],
)
def test_bad_rx_config_is_refused_with_a_helpful_message(config: Any, fragments: list[str]) -> None:
    with pytest.raises(InvalidArgument) as info:
        build_decoder(config)
    assert info.value.code == "invalid_argument"
    for fragment in fragments:
        assert fragment in info.value.message


@pytest.mark.parametrize(
    ("config", "fragments"),
    [
        ({"type": "line", "ending": "auto"}, ["tx_framing.ending 'auto'", "'lf', 'cr' or 'crlf'"]),
        ({"type": "line", "skip_empty": True}, ["unknown key 'skip_empty' in tx_framing"]),
        ({"type": "nmea", "validate": True}, ["unknown key 'validate' in tx_framing"]),
        ({"type": "raw"}, ["tx_framing.type 'raw' is not known", "nmea, modbus_ascii"]),
    ],
)
def test_bad_tx_config_is_refused(config: dict[str, Any], fragments: list[str]) -> None:
    with pytest.raises(InvalidArgument) as info:
        build_encoder(config)
    for fragment in fragments:
        assert fragment in info.value.message


def test_field_name_is_configurable_for_messages() -> None:
    with pytest.raises(InvalidArgument, match=r"connection\.rx_framing\.ending"):
        build_decoder({"type": "line", "ending": "x"}, field="connection.rx_framing")


def test_integral_floats_are_accepted() -> None:
    decoder = build_decoder({"type": "length_prefixed", "prefix_size": 1.0})
    assert decoder.feed(b"\x01a") != []


@pytest.mark.parametrize(
    "tx",
    [
        {"type": "line"},
        {"type": "delimiter", "delimiter": ";"},
        {"type": "length_prefixed"},
        {"type": "start_end", "start": "$"},
        {"type": "slip"},
        {"type": "cobs"},
        {"type": "nmea"},
        {"type": "modbus_ascii"},
    ],
)
def test_every_tx_type_builds(tx: dict[str, Any]) -> None:
    assert isinstance(build_encoder(tx).encode(b"\x01\x03"), bytes)


@pytest.mark.parametrize(
    "config",
    [
        {"type": "line"},
        {"type": "line", "ending": "lf"},
        {"type": "delimiter", "delimiter": "\n"},
        {"type": "start_end", "start": "$", "end": "\n"},
        {"type": "length_prefixed", "prefix_size": 1},
        {"type": "slip"},
        {"type": "cobs"},
    ],
)
def test_bytearray_and_memoryview_input_give_bytes_frames(config: dict[str, Any]) -> None:
    wires = {"length_prefixed": b"\x02ab", "slip": b"ab\xc0", "cobs": b"\x03ab\x00"}
    wire = wires.get(config["type"], b"$ab\n")
    for chunk in (bytearray(wire), memoryview(wire)):
        (frame,) = build_decoder(config).feed(chunk)  # type: ignore[arg-type]
        assert type(frame.data) is bytes  # type: ignore[union-attr]
