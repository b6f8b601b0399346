"""GNSS payload parsers: UBX (pyubx2), RTCM3 (pyrtcm), and the mixed-stream ``gnss`` parser.

Message decoding is left to the field's standard libraries (semuconsulting's ``pyubx2`` and
``pyrtcm``); this module only checks the frame's checksum, names the message and turns the
decoded attributes into JSON values. Every result carries ``protocol`` (``nmea``, ``ubx``,
``rtcm3``), so a frame of a mixed stream says what it is. A message the library cannot
decode keeps its identity and gets ``error`` instead of ``fields``; nothing here raises.
"""

from __future__ import annotations

from typing import Any

from pyrtcm import RTCMReader  # type: ignore[import-untyped]
from pyubx2 import UBXReader  # type: ignore[import-untyped]

from serial_mcp.core import checksums
from serial_mcp.core.parsers.base import Parsed
from serial_mcp.core.parsers.nmea import NmeaParser

__all__ = ["GnssParser", "Rtcm3Parser", "UbxParser"]

_fletcher = checksums.function("ubx")
_crc24 = checksums.function("crc24_lte_a")
_VALNONE = 0  # pyubx2 / pyrtcm: the framing has checked the checksum already


def _jsonable(value: object) -> object:
    if isinstance(value, bytes | bytearray):
        return value.hex()
    if isinstance(value, int | float | str | bool) or value is None:
        return value
    return str(value)


def _attributes(message: object) -> dict[str, object]:
    """The decoded fields of a pyubx2 / pyrtcm message (public attributes only)."""
    return {k: _jsonable(v) for k, v in vars(message).items() if not k.startswith("_")}


class UbxParser:
    """``B5 62 class id len payload ck_a ck_b``: class, id, name and decoded fields."""

    __slots__ = ("validate",)

    def __init__(self, validate: bool = False) -> None:
        self.validate = validate

    def parse(self, payload: bytes) -> Parsed:
        """Needs the raw frame (UBX / gnss framing give it)."""
        if len(payload) < 8 or payload[:2] != b"\xb5\x62":
            return Parsed({"protocol": "ubx", "kind": "invalid", "data": payload.hex()}, False)
        valid = _fletcher(payload[2:-2]) == int.from_bytes(payload[-2:], "little")
        fields: dict[str, Any] = {
            "protocol": "ubx",
            "class": payload[2],
            "id": payload[3],
            "length": len(payload) - 8,
        }
        try:
            message = UBXReader.parse(payload, validate=_VALNONE)
            fields["name"] = message.identity
            fields["fields"] = _attributes(message)
        except Exception as exc:  # the library's own errors for unknown or malformed messages
            fields["name"] = f"UBX-{payload[2]:02X}-{payload[3]:02X}"
            fields["error"] = str(exc)
        return Parsed(fields, valid)


class Rtcm3Parser:
    """``D3 len payload crc24q``: message type, name and decoded data fields."""

    __slots__ = ("validate",)

    def __init__(self, validate: bool = False) -> None:
        self.validate = validate

    def parse(self, payload: bytes) -> Parsed:
        """Needs the raw frame (RTCM3 / gnss framing give it)."""
        if len(payload) < 6 or payload[0] != 0xD3:
            return Parsed({"protocol": "rtcm3", "kind": "invalid", "data": payload.hex()}, False)
        valid = _crc24(payload[:-3]) == int.from_bytes(payload[-3:], "big")
        body = payload[3:-3]
        fields: dict[str, Any] = {"protocol": "rtcm3", "length": len(body)}
        if len(body) >= 2:
            fields["type"] = (body[0] << 4) | (body[1] >> 4)
        try:
            message = RTCMReader.parse(payload, validate=_VALNONE)
            fields["name"] = str(message.identity)
            fields["fields"] = _attributes(message)
        except Exception as exc:  # the library's own errors for unknown or malformed messages
            fields["error"] = str(exc)
        return Parsed(fields, valid)


class GnssParser:
    """Dispatches on the frame's first byte: ``$``/``!`` NMEA, ``B5`` UBX, ``D3`` RTCM3."""

    __slots__ = ("_nmea", "_rtcm", "_ubx", "validate")

    def __init__(self, validate: bool = False) -> None:
        self.validate = validate
        self._nmea = NmeaParser(validate)
        self._ubx = UbxParser(validate)
        self._rtcm = Rtcm3Parser(validate)

    def parse(self, payload: bytes) -> Parsed:
        """The parse of whichever protocol the frame is, tagged with ``protocol``."""
        first = payload[:1]
        if first == b"\xb5":
            return self._ubx.parse(payload)
        if first == b"\xd3":
            return self._rtcm.parse(payload)
        parsed = self._nmea.parse(payload)
        parsed.fields["protocol"] = "nmea"
        return parsed
