"""Payload encodings: round trips and the lossless utf8 → hex fallback."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from serial_mcp.core.encoding import decode_input, encode_output, utf8_complete_length
from serial_mcp.errors import InvalidArgument


@given(st.binary(max_size=300))
def test_every_output_encoding_round_trips(data: bytes) -> None:
    for enc in ("utf8", "hex", "base64"):
        text, used = encode_output(data, enc)
        assert decode_input(text, used) == data


def test_invalid_utf8_falls_back_to_hex() -> None:
    assert encode_output(b"ok\xff", "utf8") == ("6f6bff", "hex")
    assert encode_output("µ".encode(), "utf8") == ("µ", "utf8")


def test_hex_input_is_forgiving_about_case_and_spaces() -> None:
    assert decode_input("41 54 0D 0a", "hex") == b"AT\r\n"
    assert decode_input("0x4154", "hex") == b"AT"


@pytest.mark.parametrize(("data", "enc"), [("4", "hex"), ("zz", "hex"), ("abc", "base64"), ("x", "rot13")])
def test_bad_input_is_invalid_argument(data: str, enc: str) -> None:
    with pytest.raises(InvalidArgument):
        decode_input(data, enc)


@pytest.mark.parametrize(
    ("data", "keep"),
    [
        (b"abc", 3),
        ("é".encode()[:1], 0),
        (b"ab" + "€".encode()[:2], 2),
        (b"ab" + "€".encode(), 5),
        (b"ab" + "😀".encode()[:3], 2),
        (b"ab\xff", 3),  # never valid UTF-8: nothing to wait for
        (b"ab\x80", 3),  # a stray continuation byte
    ],
)
def test_utf8_complete_length(data: bytes, keep: int) -> None:
    assert utf8_complete_length(data) == keep
