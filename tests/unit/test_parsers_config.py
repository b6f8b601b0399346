"""build_parser validation, and every parser's promise: any bytes in, JSON-serialisable fields out."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from serial_mcp.core.parsers import PARSER_TYPES, RawParser, build_parser
from serial_mcp.errors import InvalidArgument


def test_parser_types() -> None:
    assert set(PARSER_TYPES) == {
        "at_command",
        "json_lines",
        "shell_prompt",
        "nmea",
        "modbus_ascii",
        "grbl",
        "raw",
        "modbus_rtu",
        "ubx",
        "rtcm3",
        "gnss",
        "esp_log",
    }


@pytest.mark.parametrize("kind", PARSER_TYPES)
def test_validate_defaults_to_false_and_can_be_set(kind: str) -> None:
    assert build_parser({"type": kind}).validate is False
    assert build_parser({"type": kind, "validate": True}).validate is True


@pytest.mark.parametrize(
    ("config", "fragments"),
    [
        (
            {"type": "nmea", "valdiate": True},
            ["unknown key 'valdiate' in rx_parser", "Did you mean 'validate'?"],
        ),
        ({"type": "nmea0183"}, ["rx_parser.type 'nmea0183' is not known", "Did you mean 'nmea'?"]),
        ({"type": "raw", "validate": "true"}, ["rx_parser.validate must be true or false"]),
        ({"type": "at_command", "prompt": "x"}, ["unknown key 'prompt'", "for type 'at_command'"]),
        ({"type": "shell_prompt", "prompt": ""}, ["rx_parser.prompt must be a non-empty string"]),
        ({"validate": True}, ["rx_parser.type is required"]),
        (None, ["rx_parser must be an object"]),
    ],
)
def test_bad_parser_config(config: Any, fragments: list[str]) -> None:
    with pytest.raises(InvalidArgument) as info:
        build_parser(config)
    for fragment in fragments:
        assert fragment in info.value.message


def test_raw_parser() -> None:
    parsed = RawParser().parse(b"\x00\xff")
    assert parsed.fields == {"kind": "raw"} and parsed.checksum_valid is None and parsed.final is False


interesting = st.lists(
    st.sampled_from(
        [
            b"$",
            b"!",
            b"$$",
            b"*",
            b"4A",
            b",",
            b":",
            b"+CME ERROR: ",
            b"OK",
            b"AT",
            b"<",
            b">",
            b"|",
            b"error:",
            b"ALARM:",
            b"[MSG:",
            b"]",
            b"{",
            b"}",
            b'"',
            b"\x1b[0m",
            b"#",
            b"\r\n",
            b"\xff",
            b"\x00",
            b"1",
            b"Idle",
            b"=",
            b"mdf> ",
            b"\xe2\x82",
        ]
    ),
    max_size=30,
).map(b"".join)


@settings(max_examples=500, deadline=None)
@given(kind=st.sampled_from(PARSER_TYPES), payload=interesting | st.binary(max_size=200))
@example(kind="rtcm3", payload=b"\xd3\x00\x00\x00\x00\x00")  # hypothesis's find: an empty RTCM3 body
@example(kind="ubx", payload=bytes.fromhex("b56201070000084f"))  # a well-formed UBX frame
@pytest.mark.slow
def test_parsers_never_raise_and_fields_are_json(kind: str, payload: bytes) -> None:
    parsed = build_parser({"type": kind}).parse(payload)
    json.dumps(parsed.fields, allow_nan=False)
    assert parsed.checksum_valid in (None, True, False)
    assert isinstance(parsed.final, bool)
    # A frame says what it is: text parsers by ``kind``; the binary GNSS ones (ubx, rtcm3, gnss) by
    # ``protocol`` and their message ``name``, their ``kind`` only for an invalid frame.
    assert isinstance(parsed.fields.get("kind") or parsed.fields.get("protocol"), str)
