"""Modbus ASCII: ``:`` + hex(address, function, data, LRC) + CRLF; parse on RX, build on TX.

The LRC (two's complement of the byte sum) comes from :mod:`serial_mcp.core.checksums`.
A frame that is not even hex, or too short to hold address, function and LRC, is
``kind: "invalid"`` with ``checksum_valid`` False, so ``validate`` drops it like a bad LRC.
The PDU is decoded as for Modbus RTU (:mod:`~serial_mcp.core.parsers.modbus_pdu`): register
values as a list of u16, coils/bits as a list of 0/1, exception codes.
"""

from __future__ import annotations

import string
from typing import Any

from serial_mcp import messages
from serial_mcp.core import checksums
from serial_mcp.core.parsers.base import OptionlessParser, Parsed
from serial_mcp.core.parsers.modbus_pdu import decode_pdu
from serial_mcp.errors import InvalidArgument

_HEX = frozenset(string.hexdigits.encode())


class ModbusAsciiParser(OptionlessParser):
    """Address, function, data (hex), LRC and its validity for one Modbus ASCII frame."""

    def parse(self, payload: bytes) -> Parsed:
        """Accepts the frame with or without its ``:`` and CRLF."""
        line = payload.strip()
        if line.startswith(b":"):
            line = line[1:]
        if len(line) < 6 or len(line) % 2 or not _HEX.issuperset(line):
            return Parsed({"kind": "invalid", "text": line.decode("utf-8", "replace")}, False)
        raw = bytes.fromhex(line.decode("ascii"))
        address, function, data, lrc = raw[0], raw[1], raw[2:-1], raw[-1]
        fields: dict[str, Any] = {
            "kind": "modbus",
            "address": address,
            "function": function,
            "data": data.hex(),
            "lrc": lrc,
        }
        fields.update(decode_pdu(function, data))  # registers, bits, exception_code...
        return Parsed(fields, checksums.compute("lrc", raw[:-1]) == lrc)


def modbus_ascii_encode(pdu: bytes) -> bytes:
    """``:`` + upper-case hex of ``pdu`` (address first) + its LRC + CRLF."""
    if len(pdu) < 2:
        raise InvalidArgument(messages.MODBUS_PDU_TOO_SHORT.format(length=len(pdu)))
    return b":%s%02X\r\n" % (pdu.hex().upper().encode("ascii"), checksums.compute("lrc", pdu))


class ModbusAsciiEncoder:
    """TX framing ``modbus_ascii``: each payload is the binary address + PDU."""

    __slots__ = ()

    def encode(self, payload: bytes) -> bytes:
        """See :func:`modbus_ascii_encode`; a payload that is already a whole ASCII frame
        (``:0103…FA\r\n``, its LRC checked) is sent as is."""
        if payload.startswith(b":") and payload.endswith(b"\r\n"):
            body = payload[1:-2]
            try:
                raw = bytes.fromhex(body.decode("ascii"))
            except ValueError:
                raw = b""
            if len(raw) >= 3 and checksums.compute("lrc", raw[:-1]) == raw[-1]:
                return payload
            raise InvalidArgument(
                messages.MODBUS_ASCII_FRAME_BAD.format(frame=payload[:80].decode("ascii", "replace"))
            )
        return modbus_ascii_encode(payload)
