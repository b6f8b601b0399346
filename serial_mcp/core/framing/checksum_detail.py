"""A bad frame's checksum in words: the value its bytes give and the value it carries (sans-IO).

Framings that split the checksum off a frame (Modbus RTU, ``binary``, ``delimiter``…) say so in
``Frame.detail`` as they cut it; the GNSS protocols keep theirs in the frame's bytes, and this
module reads it back from there: NMEA's ``*HH``, UBX's two Fletcher bytes, RTCM3's CRC-24Q, and
Modbus ASCII's LRC.
"""

from __future__ import annotations

from typing import Any

from serial_mcp.core import checksums
from serial_mcp.core.framing.base import crc_text

_xor = checksums.function("xor")
_ubx = checksums.function("ubx")
_crc24q = checksums.function("crc24_lte_a")
_lrc = checksums.function("lrc")


def checksum_detail(data: bytes, parsed: dict[str, Any] | None) -> str | None:
    """``computed XX, received YY`` for an NMEA sentence, a UBX or an RTCM3 frame, a Modbus ASCII
    frame (its LRC); else None."""
    if data[:1] == b":" and isinstance(lrc := (parsed or {}).get("lrc"), int):
        try:
            body = bytes.fromhex(data[1:].strip().decode("ascii"))[:-1]
        except (UnicodeDecodeError, ValueError):
            return None
        return crc_text(_lrc(body), lrc, 1)
    if data[:1] in (b"$", b"!"):
        star = data.rfind(b"*")
        received = data[star + 1 : star + 3]
        if star < 0 or len(received) != 2:
            return None
        body = data[2 if data[:2] == b"$$" else 1 : star]  # ST Teseo's ``$$``: the second starts it
        try:
            value = int(received, 16)
        except ValueError:
            return f"computed {_xor(body):02X}, received {received.decode('ascii', 'replace')}"
        return crc_text(_xor(body), value, 1)
    if data[:2] == b"\xb5\x62" and len(data) >= 8:
        computed = _ubx(data[2:-2]).to_bytes(2, "little")
        return f"computed {computed.hex().upper()}, received {data[-2:].hex().upper()}"
    if data[:1] == b"\xd3" and len(data) >= 6 and (parsed or {}).get("protocol") == "rtcm3":
        return crc_text(_crc24q(data[:-3]), int.from_bytes(data[-3:], "big"), 3)
    return None
