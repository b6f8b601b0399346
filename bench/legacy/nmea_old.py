"""Frozen copy (bench only) of serial_mcp/core/parsers/nmea.py before the throughput work.

NMEA 0183 sentences (``$``) and AIS / encapsulated sentences (``!``): parse on RX, checksum on TX.

Tolerates what real receivers send: the doubled ``$$`` of ST Teseo firmware, sentences
without a checksum (``checksum_valid`` None), data appended after the checksum (AIS
receiver metadata, kept as ``trailer``) and ``#`` comment or other non-NMEA lines
(kind ``other``). The XOR checksum comes from :mod:`serial_mcp.core.checksums`.
"""

from __future__ import annotations

import string
from typing import Any

from serial_mcp import messages
from serial_mcp.core import checksums
from serial_mcp.core.parsers.base import Parsed
from serial_mcp.errors import InvalidArgument

__all__ = ["NmeaEncoder", "NmeaParser", "nmea_encode"]

_HEX = frozenset(string.hexdigits.encode())
_AIS_KEYS = ("fragment_count", "fragment_number", "message_id", "channel", "payload", "fill_bits")


_xor = checksums.function("xor")
# Every two-hex-digit checksum field (either case) -> (value, upper-case text): one lookup per sentence.
_PAIRS: dict[bytes, tuple[int, str]] = {
    (a + b).encode(): (int(a + b, 16), (a + b).upper()) for a in string.hexdigits for b in string.hexdigits
}


def _maybe_int(text: str) -> int | str:
    return int(text) if text.isascii() and text.isdigit() else text


class NmeaParser:
    """Parses one NMEA/AIS line into talker, sentence type, fields and checksum validity."""

    __slots__ = ("validate",)

    def __init__(self, validate: bool = False) -> None:
        self.validate = validate

    def parse(self, payload: bytes) -> Parsed:
        """Kind ``sentence`` (``$``), ``ais`` (``!``) or ``other``; checksum checked when present."""
        line = payload.strip()
        if line[:2] == b"$$":  # ST Teseo quirk: every sentence starts with two dollars
            line = line[1:]
        first = line[:1]
        if first != b"$" and first != b"!":
            return Parsed({"kind": "other", "text": line.decode("utf-8", "replace")})
        star = line.find(b"*")
        valid: bool | None = None
        checksum: str | None = None
        trailer = b""
        if star < 0:
            body = line[1:]
        else:
            body = line[1:star]
            pair = _PAIRS.get(line[star + 1 : star + 3])
            if pair is not None:
                checksum = pair[1]
                valid = _xor(body) == pair[0]
                trailer = line[star + 3 :]
        address, comma, rest = body.decode("ascii", "replace").partition(",")
        values = rest.split(",") if comma else []
        if first == b"$":
            if address[:1] == "P":  # proprietary: $P + 3-letter manufacturer
                fields: dict[str, Any] = {
                    "kind": "sentence",
                    "start": "$",
                    "address": address,
                    "talker": "P",
                    "manufacturer": address[1:4],
                    "sentence": address[4:],
                    "fields": values,
                    "checksum": checksum,
                }
            else:
                fields = {
                    "kind": "sentence",
                    "start": "$",
                    "address": address,
                    "talker": address[:2],
                    "sentence": address[2:],
                    "fields": values,
                    "checksum": checksum,
                }
        else:
            sentence = address[2:]
            fields = {
                "kind": "ais",
                "start": "!",
                "address": address,
                "talker": address[:2],
                "sentence": sentence,
                "fields": values,
                "checksum": checksum,
            }
            if sentence in ("VDM", "VDO") and len(values) >= 6:
                fields["ais"] = {key: _maybe_int(v) for key, v in zip(_AIS_KEYS, values[:6], strict=True)}
        if trailer:
            fields["trailer"] = trailer.decode("ascii", "replace")
        return Parsed(fields, valid)


def nmea_encode(sentence: bytes | str) -> bytes:
    """``$BODY*HH\\r\\n``: appends the checksum, or verifies one already given (InvalidArgument on mismatch).

    A missing leading ``$`` (or ``!``) is added; trailing CR/LF is ignored.
    """
    if isinstance(sentence, str):
        try:
            sentence = sentence.encode("ascii")
        except UnicodeEncodeError:
            raise InvalidArgument(messages.NMEA_NOT_ASCII) from None
    line = sentence.strip(b"\r\n")
    if line[:1] not in (b"$", b"!"):
        line = b"$" + line
    if b"\r" in line or b"\n" in line:
        raise InvalidArgument(messages.NMEA_MULTILINE)
    star = line.find(b"*")
    if star < 0:
        return b"%s*%02X\r\n" % (line, _xor(line[1:]))
    expected = _xor(line[1:star])
    given = line[star + 1 :]
    if len(given) != 2 or not _HEX.issuperset(given):
        raise InvalidArgument(messages.NMEA_BAD_CHECKSUM_FIELD.format(given=given.decode("ascii", "replace")))
    if int(given, 16) != expected:
        shown = given.decode("ascii").upper()
        raise InvalidArgument(messages.NMEA_CHECKSUM_MISMATCH.format(given=shown, expected=f"{expected:02X}"))
    return b"%s*%02X\r\n" % (line[:star], expected)


class NmeaEncoder:
    """TX framing ``nmea``: each payload is one sentence, checksummed and CRLF-terminated."""

    __slots__ = ()

    def encode(self, payload: bytes) -> bytes:
        """See :func:`nmea_encode`."""
        return nmea_encode(payload)
