"""Backslash escapes in command-line DATA (``serial-mcp send PORT 'AT\\r'``)."""

from __future__ import annotations

import pytest

from serial_mcp.core.escapes import unescape
from serial_mcp.errors import InvalidArgument


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r"AT\r", b"AT\r"),
        (r"\r\n\t\0\a\b\f\v\e", b"\r\n\t\x00\x07\x08\x0c\x0b\x1b"),
        (r"\x03\xFFx", b"\x03\xffx"),
        (r"C:\\dir", b"C:\\dir"),
        ("é", "é".encode()),
        ("", b""),
        ("\udcff", b"\xff"),  # a byte the shell could not decode comes back as that byte
    ],
)
def test_escapes(text: str, expected: bytes) -> None:
    assert unescape(text) == expected


@pytest.mark.parametrize("text", [r"\q", "AT\\", r"\x", r"\x3", r"\xZZ"])
def test_unknown_or_cut_escapes_are_refused(text: str) -> None:
    with pytest.raises(InvalidArgument) as err:
        unescape(text)
    assert "position" in err.value.message
