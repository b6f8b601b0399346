"""Modbus RTU parser: one frame's address + PDU (CRC already checked by the framing) decoded.

With ``modbus_rtu`` framing the CRC has been checked and removed (``Frame.checksum_valid``);
fed a raw frame with its CRC (``include_terminators`` or another framing) the parser checks
the CRC itself. Fields: ``address``, ``function``, ``data`` (hex) and the decoded PDU
(``function_name``, ``direction``, ``registers``, ``bits``, ``exception_code``...).
Every frame not recognised as a request is ``final``: it ends a request/response exchange.
"""

from __future__ import annotations

from typing import Any

from serial_mcp.core import checksums
from serial_mcp.core.parsers.base import Parsed
from serial_mcp.core.parsers.modbus_pdu import decode_pdu

_crc = checksums.function("crc16_modbus")


class ModbusRtuParser:
    """Address, function and decoded data of one Modbus RTU frame."""

    __slots__ = ("has_crc", "validate")

    def __init__(self, validate: bool = False, has_crc: bool = False) -> None:
        self.validate = validate
        self.has_crc = has_crc

    def parse(self, payload: bytes) -> Parsed:
        """``kind: "modbus"``; a frame too short for address and function is ``kind: "invalid"``."""
        valid: bool | None = None
        body = payload
        if self.has_crc:
            if len(payload) < 4:
                return Parsed({"kind": "invalid", "data": payload.hex()}, False)
            body = payload[:-2]
            valid = _crc(body) == int.from_bytes(payload[-2:], "little")
        if len(body) < 2:
            return Parsed({"kind": "invalid", "data": body.hex()}, False)
        fields: dict[str, Any] = {
            "kind": "modbus",
            "address": body[0],
            "function": body[1],
            "data": body[2:].hex(),
        }
        fields.update(decode_pdu(body[1], body[2:]))
        # A reply ends its request/response exchange (a transact returns on it); a frame read
        # as a request (a bus echo of our own, or another master's) does not.
        return Parsed(fields, valid, final=fields.get("direction") != "request")
