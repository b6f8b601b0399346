"""Payload encodings shared by every tool: utf8 (default), hex and base64, lossless both ways.

Input: hex accepts upper/lower case and spaces; base64 is strict. Output under ``utf8`` falls
back to lowercase hex for a payload that is not valid UTF-8, and says so in its encoding.
"""

from __future__ import annotations

import base64
import binascii
from typing import Literal

from serial_mcp import messages
from serial_mcp.errors import InvalidArgument

Encoding = Literal["utf8", "hex", "base64"]
ENCODINGS: tuple[Encoding, ...] = ("utf8", "hex", "base64")


def decode_input(data: str, encoding: str, *, field: str = "data") -> bytes:
    """Turn a tool's text argument into the exact bytes it denotes."""
    if encoding == "utf8":
        return data.encode("utf-8", errors="surrogateescape")
    if encoding == "hex":
        cleaned = "".join(data.split())
        if cleaned[:2].lower() == "0x":
            cleaned = cleaned[2:]
        try:
            return bytes.fromhex(cleaned)
        except ValueError:
            raise InvalidArgument(messages.BAD_HEX.format(field=field)) from None
    if encoding == "base64":
        try:
            return base64.b64decode("".join(data.split()), validate=True)
        except (binascii.Error, ValueError):
            raise InvalidArgument(messages.BAD_BASE64.format(field=field)) from None
    raise InvalidArgument(
        messages.BAD_ENCODING.format(field=field, value=encoding, allowed=", ".join(ENCODINGS))
    )


def encode_output(data: bytes, encoding: str) -> tuple[str, Encoding]:
    """Render bytes for a result: (text, encoding actually used). Never lossy."""
    if encoding == "hex":
        return data.hex(), "hex"
    if encoding == "base64":
        return base64.b64encode(data).decode("ascii"), "base64"
    try:
        return data.decode("utf-8"), "utf8"
    except UnicodeDecodeError:
        return data.hex(), "hex"


def utf8_complete_length(data: bytes) -> int:
    """Length of ``data`` without a trailing, still-incomplete UTF-8 sequence (at most 3 bytes held back).

    Lets a streaming ``read`` stop before a multi-byte character torn across two chunks, so the
    next read decodes it whole instead of both falling back to hex.
    """
    n = len(data)
    for back in range(1, min(3, n) + 1):
        b = data[n - back]
        if b < 0x80:
            return n
        if 0xC2 <= b <= 0xF4:  # a valid lead byte: how long should its sequence be?
            need = 2 if b < 0xE0 else 3 if b < 0xF0 else 4
            return n - back if need > back else n
        if b >= 0xC0:  # never valid in UTF-8: nothing to wait for
            return n
    return n
