r"""Payload encodings shared by every tool: utf8 (default), hex and base64, lossless both ways.

Input: hex accepts upper/lower case and spaces; base64 is strict. Output under ``utf8`` is the
text itself when it is valid UTF-8; text with a few bytes that are not (a glitch in a log, a stray
0xFF at reset) stays text, each such byte written ``\xNN`` and each backslash ``\\``, and says so in
its encoding (``utf8_escaped``, which ``decode_input`` reads back exactly); data that is mostly not
UTF-8 (more than one byte in :data:`BINARY_SHARE`) comes back as lowercase hex.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Final, Literal

from serial_mcp import messages
from serial_mcp.errors import InvalidArgument

Encoding = Literal["utf8", "hex", "base64", "utf8_escaped"]
ENCODINGS: tuple[Encoding, ...] = ("utf8", "hex", "base64")  # what a caller may ask for
#: Text whose bytes are more than one in this many not UTF-8 is data, shown as hex.
BINARY_SHARE: Final = 8
_ESCAPES: Final = re.compile(r"[\\\udc80-\udcff]")
_UNESCAPES: Final = re.compile(r"\\(\\|x[0-9a-fA-F]{2})")


def _escape(char: re.Match[str]) -> str:
    c = char.group()
    return "\\\\" if c == "\\" else f"\\x{ord(c) - 0xDC00:02x}"


def _unescape(escape: re.Match[str]) -> str:
    code = escape.group(1)
    if code == "\\":
        return "\\"
    value = int(code[1:], 16)
    return chr(value) if value < 0x80 else chr(0xDC00 + value)


def escaped_text(data: bytes) -> str | None:
    r"""``data`` as text with its non-UTF-8 bytes as ``\xNN`` (and ``\`` as ``\\``), or None when
    more than one byte in :data:`BINARY_SHARE` is not UTF-8 (it is data, not text)."""
    text = data.decode("utf-8", errors="surrogateescape")
    bad = sum(1 for c in text if "\udc80" <= c <= "\udcff")
    if bad * BINARY_SHARE > len(data):
        return None
    return _ESCAPES.sub(_escape, text)


def decode_input(data: str, encoding: str, *, field: str = "data") -> bytes:
    """Turn a tool's text argument into the exact bytes it denotes."""
    if encoding == "utf8":
        return data.encode("utf-8", errors="surrogateescape")
    if encoding == "utf8_escaped":  # what a result gave back: text with \xNN and \\ escapes
        return _UNESCAPES.sub(_unescape, data).encode("utf-8", errors="surrogateescape")
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


def encode_output(data: bytes, encoding: str, *, escape: bool = True) -> tuple[str, Encoding]:
    """Render bytes for a result: (text, encoding actually used). Never lossy. Under ``utf8``, text
    with a few non-UTF-8 bytes is ``utf8_escaped`` (``escape`` False: hex, for readers that know
    only utf8 and hex)."""
    if encoding == "hex":
        return data.hex(), "hex"
    if encoding == "base64":
        return base64.b64encode(data).decode("ascii"), "base64"
    try:
        return data.decode("utf-8"), "utf8"
    except UnicodeDecodeError:
        text = escaped_text(data) if escape else None
        return (data.hex(), "hex") if text is None else (text, "utf8_escaped")


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
