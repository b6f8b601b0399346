"""NMEA 0183 sentences (``$``) and AIS / encapsulated sentences (``!``): parse on RX, checksum on TX.

Tolerates what real receivers send: the doubled ``$$`` of ST Teseo firmware, sentences
without a checksum (``checksum_valid`` None), data appended after the checksum (AIS
receiver metadata, kept as ``trailer``) and ``#`` comment or other non-NMEA lines
(kind ``other``). The XOR checksum comes from :mod:`serial_mcp.core.checksums`.
"""

from __future__ import annotations

import string
from typing import Any, Final, Protocol, TypeVar

from serial_mcp import messages
from serial_mcp.core import checksums
from serial_mcp.core.parsers.base import OptionlessParser, Parsed
from serial_mcp.errors import InvalidArgument

_HEX = frozenset(string.hexdigits.encode())
_AIS_KEYS = ("fragment_count", "fragment_number", "message_id", "channel", "payload", "fill_bits")


_xor = checksums.function("xor")
# Every two-hex-digit checksum field (either case) -> (value, upper-case text): one lookup per sentence.
_PAIRS: dict[str, tuple[int, str]] = {
    a + b: (int(a + b, 16), (a + b).upper()) for a in string.hexdigits for b in string.hexdigits
}


# ``*HH`` ending a ``$`` sentence -> (upper-case HH, XOR of the whole line when HH is right): the
# XOR of ``$``, ``*`` and the two digit characters folded into the expected body XOR.
_TAILS: dict[str, tuple[str, int]] = {
    "*" + key: (text, value ^ ord("$") ^ ord("*") ^ ord(key[0]) ^ ord(key[1]))
    for key, (value, text) in _PAIRS.items()
}


def _ais_fields(values: list[str]) -> dict[str, int | str]:
    """The ``ais`` entry of a VDM/VDO sentence: its first six fields, the numeric ones as int."""
    return {
        key: int(v) if v.isascii() and v.isdigit() else v for key, v in zip(_AIS_KEYS, values, strict=False)
    }


def _sentence(address: str, values: list[str], checksum: str | None) -> dict[str, Any]:
    """The fields of a ``$`` sentence (proprietary ``$P`` + 3-letter manufacturer, or talker + type)."""
    if address[:1] == "P":
        return {
            "kind": "sentence",
            "start": "$",
            "address": address,
            "talker": "P",
            "manufacturer": address[1:4],
            "sentence": address[4:],
            "fields": values,
            "checksum": checksum,
        }
    return _talker_sentence("sentence", "$", address, values, checksum)


def _encapsulated(address: str, values: list[str], checksum: str | None) -> dict[str, Any]:
    """The fields of a ``!`` sentence (AIS and other encapsulated data), without ``ais``."""
    return _talker_sentence("ais", "!", address, values, checksum)


def _talker_sentence(
    kind: str, start: str, address: str, values: list[str], checksum: str | None
) -> dict[str, Any]:
    return {
        "kind": kind,
        "start": start,
        "address": address,
        "talker": address[:2],
        "sentence": address[2:],
        "fields": values,
        "checksum": checksum,
    }


# The fields of a sentence by its first field (start character and address: ``$GPGGA``, ``!AIVDM``)
# with ``fields`` and ``checksum`` still to fill in: a copy and two stores per sentence instead of
# building every entry and slicing the address. Bounded, so a stream of garbage addresses cannot
# grow it without end (past the bound a template is built each time).
_TEMPLATES: dict[str, dict[str, Any]] = {}
_TEMPLATES_MAX = 1024


def _template(head: str) -> dict[str, Any]:
    template = _TEMPLATES.get(head)
    if template is None:
        template = (_sentence if head[0] == "$" else _encapsulated)(head[1:], [], None)
        if len(_TEMPLATES) < _TEMPLATES_MAX:
            _TEMPLATES[head] = template
    return template


def _fields_of(head: str, values: list[str], checksum: str | None) -> dict[str, Any]:
    """:func:`_sentence` / :func:`_encapsulated` of ``head[1:]``, from the template of ``head``."""
    fields = (_TEMPLATES.get(head) or _template(head)).copy()
    fields["fields"] = values
    fields["checksum"] = checksum
    return fields


# XOR of a whole line with a right ``*HH`` is ``_TAILS[*HH][1]`` for a ``$`` line; folded with
# these for a ``!`` line and for a ``$$`` line.
_BANG: Final = ord("$") ^ ord("!")
_DOLLAR: Final = ord("$")


def parse_fields(payload: bytes) -> tuple[dict[str, Any], bool | None]:
    """:meth:`NmeaParser.parse` as ``(fields, checksum_valid)``, without the :class:`Parsed`
    wrapper (the decode pipeline calls this once per sentence).

    Fast path for the usual ``$BODY*HH`` (one ``*``, nothing around it, so ``strip`` would
    change nothing): one decode, one split, and the XOR over the whole line compared with
    the XOR the line has when ``HH`` is right (see ``_TAILS``); anything else goes through
    :func:`_parse_any`, which gives the same result for these lines too. :func:`parse_lines`
    inlines this function (and has the same fast path for ``!BODY*HH`` and ``$$BODY*HH``).
    """
    if payload[:1] == b"$" and payload[1:2] != b"$":
        text = payload.decode("ascii", "replace")
        star = len(text) - 3
        tail = _TAILS.get(text[star:])
        if tail is not None and text.find("*") == star:
            values = text[:star].split(",")
            return _fields_of(values.pop(0), values, tail[0]), _xor(payload) == tail[1]
    return _parse_any(payload)


class DecodedSlots(Protocol):
    """The attributes :func:`parse_lines` sets on each frame it builds (``core.decode.DecodedFrame``)."""

    data: bytes
    start: int
    end: int
    checksum_valid: bool | None
    parsed: dict[str, Any] | None
    final: bool
    detail: str | None


F = TypeVar("F", bound=DecodedSlots)


def parse_lines(lines: list[bytes], start: int, out: list[Any], frame_type: type[F], validate: bool) -> int:
    """The decode pipeline's one pass over the complete lines of a chunk of NMEA text.

    ``lines`` are the pieces of an LF split (see ``NmeaLineDecoder.feed_lines``), each maybe
    ending in the CR of its CRLF, the first at absolute offset ``start``. For each non-empty
    line, without its CR, this appends a ``frame_type`` with ``data`` the line, ``start`` its
    offset, ``end`` one past it, ``final`` False and ``(parsed, checksum_valid)`` from
    :func:`parse_fields` (inlined) to ``out`` — what the nmea framing, this parser and
    ``StreamDecoder`` give for it one by one — unless ``validate`` and the checksum is bad.
    Returns how many lines were dropped so. The frames are built attribute by attribute,
    without a call of ``frame_type.__init__`` (a third of the cost of a frame).
    """
    tails = _TAILS
    templates = _TEMPLATES
    xor = _xor
    append = out.append
    new = object.__new__
    dropped = 0
    fields: dict[str, Any]
    valid: bool | None
    for raw in lines:
        line = raw[:-1] if raw[-1:] == b"\r" else raw
        if line:
            text = line.decode("ascii", "replace")
            star = len(text) - 3
            tail = tails.get(text[star:])
            if tail is not None and text[0] == "$" and text.find("*") == star:
                if text[1] != "$":
                    values = text[:star].split(",")
                    valid = xor(line) == tail[1]
                else:  # ST Teseo's ``$$``: the sentence starts at the second, the two cancel in the XOR
                    values = text[1:star].split(",")
                    valid = xor(line) == tail[1] ^ _DOLLAR
                head = values[0]
                fields = (templates.get(head) or _template(head)).copy()
                del values[0]
                fields["fields"] = values
                fields["checksum"] = tail[0]
            elif tail is not None and text[0] == "!" and text.find("*") == star:
                values = text[:star].split(",")
                head = values[0]
                fields = (templates.get(head) or _template(head)).copy()
                del values[0]
                fields["fields"] = values
                fields["checksum"] = tail[0]
                valid = xor(line) == tail[1] ^ _BANG
                sentence = fields["sentence"]
                if (sentence == "VDM" or sentence == "VDO") and len(values) >= 6:
                    fields["ais"] = _ais_fields(values)
            else:
                fields, valid = _parse_any(line)
            if valid is False and validate:
                dropped += 1
            else:
                frame = new(frame_type)
                frame.data = line
                frame.start = start
                frame.end = start + len(line) + 1
                frame.checksum_valid = valid
                frame.parsed = fields
                frame.final = False
                frame.detail = None
                append(frame)
        start += len(raw) + 1
    return dropped


def _parse_any(payload: bytes) -> tuple[dict[str, Any], bool | None]:
    """Every form :func:`parse_fields` accepts: ``$$``, no checksum, a trailer, surrounding
    whitespace, comment lines."""
    line = payload.strip()
    first = line[:1]
    if first == b"$":
        if line[1:2] == b"$":  # ST Teseo quirk: every sentence starts with two dollars
            line = line[1:]
    elif first != b"!":
        return {"kind": "other", "text": line.decode("utf-8", "replace")}, None
    # One decode of the whole line: the ASCII codec maps each byte to one character (an invalid
    # byte to U+FFFD), so indices into ``text`` are indices into ``line``.
    text = line.decode("ascii", "replace")
    star = text.find("*")
    valid: bool | None = None
    checksum: str | None = None
    trailer = ""
    if star < 0:
        values = text.split(",")
    else:
        values = text[:star].split(",")
        pair = _PAIRS.get(text[star + 1 : star + 3])
        if pair is not None:
            checksum = pair[1]
            valid = _xor(line[1:star]) == pair[0]
            trailer = text[star + 3 :]
    # The body before its first comma, behind the start character (after ``$$``, the second
    # ``$``); the fields follow it.
    fields = _fields_of(values.pop(0), values, checksum)
    if first == b"!":
        sentence = fields["sentence"]
        if (sentence == "VDM" or sentence == "VDO") and len(values) >= 6:
            fields["ais"] = _ais_fields(values)
    if trailer:
        fields["trailer"] = trailer
    return fields, valid


class NmeaParser(OptionlessParser):
    """Parses one NMEA/AIS line into talker, sentence type, fields and checksum validity."""

    def parse(self, payload: bytes) -> Parsed:
        """Kind ``sentence`` (``$``), ``ais`` (``!``) or ``other``; checksum checked when present."""
        fields, valid = parse_fields(payload)
        return Parsed(fields, valid)

    #: The pipeline's per-frame entry point: ``(fields, checksum_valid)``, never ``final``.
    parse_fields = staticmethod(parse_fields)


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
