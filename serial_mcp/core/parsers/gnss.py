"""GNSS payload parsers: UBX (pyubx2), RTCM3 (pyrtcm), and the mixed-stream ``gnss`` parser.

Message decoding is left to the field's standard libraries (semuconsulting's ``pyubx2`` and
``pyrtcm``); this module only checks the frame's checksum, names the message and turns the
decoded attributes into JSON values. Every result carries ``protocol`` (``nmea``, ``ubx``,
``rtcm3``), so a frame of a mixed stream says what it is. A message the library cannot
decode keeps its identity and gets ``error`` instead of ``fields``; nothing here raises.

Device data may lie, and decoding must stay proportional to the bytes that arrived:

* pyubx2 pads a repeating group its payload does not hold with zeros, so a 12-byte
  ``MON-PATCH`` whose ``nEntries`` says 65535 would decode into 327,677 fields. Before a group
  whose repeat count is a field of the message is decoded, the count is checked against the
  bytes left in the payload (each repetition needs at least the group's fixed size); a count the
  payload cannot hold gives ``error`` and nothing is decoded.
* A decoded frame keeps at most :data:`MAX_FIELDS` fields: decoding stops there (it is not done
  whole and then cut) and the result says ``truncated: true``.
"""

from __future__ import annotations

from typing import Any, Final

from pyrtcm import RTCMReader  # type: ignore[import-untyped]
from pyubx2 import UBXMessage  # type: ignore[import-untyped]
from pyubx2.ubxhelpers import attsiz  # type: ignore[import-untyped]
from pyubx2.ubxtypes_core import BITFIELD, CH, GET, GROUP, PMPLEN, VARIABLE  # type: ignore[import-untyped]

from serial_mcp import messages
from serial_mcp.core import checksums
from serial_mcp.core.parsers.base import OptionlessParser, Parsed
from serial_mcp.core.parsers.nmea import NmeaParser

#: Most decoded fields one UBX or RTCM3 frame keeps (the real logs' largest has 1,429;
#: NAV-SAT with all 255 satellites 6,634). Read when a frame is parsed..
MAX_FIELDS: int = 8192

_fletcher = checksums.function("ubx")
_crc24 = checksums.function("crc24_lte_a")
_VALNONE = 0  # pyrtcm: the framing has checked the checksum already
_CFG_VALGET: Final = b"\x06\x8b"  # decodes its key/value pairs from the payload's size, not a count


def _jsonable(value: object) -> object:
    if isinstance(value, bytes | bytearray):
        return value.hex()
    if isinstance(value, int | float | str | bool) or value is None:
        return value
    return str(value)


def _attributes(message: object) -> dict[str, object]:
    """The decoded fields of a pyubx2 / pyrtcm message (public attributes only)."""
    return {k: _jsonable(v) for k, v in vars(message).items() if not k.startswith("_")}


_GROUP_SHAPES: dict[int, tuple[int, int]] = {}


def _group_shape(group: dict[str, Any]) -> tuple[int, int]:
    """``(bytes, fields)`` of one repetition of a pyubx2 repeating group, at the fewest: its
    fixed-size attributes and bitfields (a field per named bit), and nested groups of a fixed
    count; a nested group whose count is a field (checked when it is reached) and a variable-length
    string count as nothing."""
    key = id(group)
    shape = _GROUP_SHAPES.get(key)
    if shape is not None:
        return shape
    size = fields = 0
    for name, definition in group.items():
        if name.endswith(GROUP):
            count, inner = definition
            if isinstance(count, int):
                inner_size, inner_fields = _group_shape(inner)
                size, fields = size + count * inner_size, fields + count * inner_fields
            continue
        kind = definition[0] if isinstance(definition, tuple) else definition  # (type, scale) or type
        if kind not in (CH, PMPLEN):  # both sized by other means, at least nothing
            size += attsiz(kind)
        if name.endswith(BITFIELD):
            fields += sum(1 for bit in definition[1] if not bit.startswith("reserved"))
        else:
            fields += 1
    shape = _GROUP_SHAPES[key] = (size, fields)  # pyubx2's definitions are module constants: ids hold
    return shape


class _Overclaimed(Exception):
    """A repeat count asks for more bytes than the payload has left (never a library error type)."""

    def __init__(self, count: str, claimed: int, need: int, have: int) -> None:
        super().__init__(count)
        self.text = messages.UBX_COUNT_OVERCLAIMS.format(count=count, claimed=claimed, need=need, have=have)


class _FieldCap(Exception):
    """The frame reaches MAX_FIELDS decoded fields."""


class _GuardedUbx(UBXMessage):  # type: ignore[misc]
    """pyubx2's own decoding of a GET message, as ``UBXReader.parse`` builds it, with the guards of
    the module docstring at each repeating group: a count the payload cannot hold raises
    _Overclaimed; one that would take the frame past MAX_FIELDS raises _FieldCap (the frame is
    then decoded again by _CappedUbx, which counts its fields one by one)."""

    def __init__(self, cls: bytes, mid: bytes, payload: bytes | None) -> None:
        if payload is None:
            super().__init__(cls, mid, GET)
        else:
            super().__init__(cls, mid, GET, payload=payload, parsebitfield=1)

    def _near_cap(self) -> None:
        raise _FieldCap

    def _set_attribute_group(self, adef: tuple[Any, dict[str, Any]], **kwargs: Any) -> None:
        count, group = adef
        if isinstance(count, str) and count != VARIABLE and self._ubxClass + self._ubxID != _CFG_VALGET:
            claimed = getattr(self, count, None)
            if isinstance(claimed, int) and claimed > 0:
                size, fields = _group_shape(group)
                have = len(self._payload) - self._offset
                if claimed * size > have:
                    raise _Overclaimed(count, claimed, claimed * size, max(have, 0))
                if len(self.__dict__) + claimed * fields > MAX_FIELDS:
                    self._near_cap()
        super()._set_attribute_group(adef, **kwargs)


class _CappedUbx(_GuardedUbx):
    """_GuardedUbx that stops at exactly MAX_FIELDS fields: the first ones, as decoded."""

    def __init__(self, cls: bytes, mid: bytes, payload: bytes | None) -> None:
        object.__setattr__(self, "_left", MAX_FIELDS)
        super().__init__(cls, mid, payload)

    def _near_cap(self) -> None:
        pass  # counted field by field instead

    def __setattr__(self, name: str, value: object) -> None:
        if name[0] != "_" and name not in self.__dict__:
            left: int = self._left
            if left <= 0:
                raise _FieldCap
            object.__setattr__(self, "_left", left - 1)
        super().__setattr__(name, value)


def _decode_ubx(frame: bytes, fields: dict[str, Any]) -> None:
    """``name`` and ``fields`` (or ``error``; ``truncated`` past MAX_FIELDS) of a UBX frame."""
    cls, mid = frame[2:3], frame[3:4]
    body = None if frame[4:6] == b"\x00\x00" else frame[6:-2]  # as UBXReader.parse cuts it
    # each message is built in two steps, so what it holds when a guard stops it can be read
    message = _GuardedUbx.__new__(_GuardedUbx)
    try:
        _GuardedUbx.__init__(message, cls, mid, body)
        decoded = _attributes(message)
        if len(decoded) <= MAX_FIELDS:
            fields["name"] = message.identity
            fields["fields"] = decoded
            return
    except _FieldCap:
        pass
    except _Overclaimed as exc:
        fields["name"] = message.identity
        fields["error"] = exc.text
        return
    capped = _CappedUbx.__new__(_CappedUbx)
    try:
        _CappedUbx.__init__(capped, cls, mid, body)
    except _FieldCap:
        pass
    fields["name"] = capped.identity
    fields["fields"] = _attributes(capped)
    fields["truncated"] = True


class UbxParser(OptionlessParser):
    """``B5 62 class id len payload ck_a ck_b``: class, id, name and decoded fields."""

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
            _decode_ubx(payload, fields)
        except Exception as exc:  # the library's own errors for unknown or malformed messages
            fields.pop("fields", None)
            fields["name"] = f"UBX-{payload[2]:02X}-{payload[3]:02X}"
            fields["error"] = str(exc)
        return Parsed(fields, valid)


def _capped(fields: dict[str, object], out: dict[str, Any]) -> dict[str, object]:
    """``fields`` cut to MAX_FIELDS (then ``out`` says ``truncated``)."""
    cap = MAX_FIELDS
    if len(fields) <= cap:
        return fields
    out["truncated"] = True
    return dict(list(fields.items())[:cap])


class Rtcm3Parser(OptionlessParser):
    """``D3 len payload crc24q``: message type, name and decoded data fields.

    pyrtcm reads bit by bit and stops at the payload's end (a count that lies is its error), and a
    frame holds at most 1023 bytes: its fields are only cut to MAX_FIELDS like UBX ones."""

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
            fields["fields"] = _capped(_attributes(message), fields)
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
