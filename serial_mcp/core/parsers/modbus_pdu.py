"""Decode a Modbus PDU (function code + data) into named fields, for the RTU and ASCII parsers.

Requests and responses of the common functions are told apart by their shape (a response's
first data byte is its byte count); ``direction`` says which one was recognised, and a PDU
of neither shape keeps only the raw ``data`` hex the caller already has.
"""

from __future__ import annotations

from typing import Any, Final

FUNCTION_NAMES: Final[dict[int, str]] = {
    1: "read_coils",
    2: "read_discrete_inputs",
    3: "read_holding_registers",
    4: "read_input_registers",
    5: "write_single_coil",
    6: "write_single_register",
    15: "write_multiple_coils",
    16: "write_multiple_registers",
    23: "read_write_multiple_registers",
}
EXCEPTION_NAMES: Final[dict[int, str]] = {
    1: "illegal_function",
    2: "illegal_data_address",
    3: "illegal_data_value",
    4: "server_device_failure",
    5: "acknowledge",
    6: "server_device_busy",
    8: "memory_parity_error",
    10: "gateway_path_unavailable",
    11: "gateway_target_failed_to_respond",
}


def _u16(data: bytes, at: int) -> int:
    return (data[at] << 8) | data[at + 1]


def _registers(data: bytes) -> list[int]:
    return [_u16(data, i) for i in range(0, len(data) - 1, 2)]


def _bits(data: bytes) -> list[int]:
    """Coil/discrete-input bits, least significant bit of the first byte first."""
    return [(byte >> bit) & 1 for byte in data for bit in range(8)]


def _counted(data: bytes) -> bool:
    """Is ``data`` a byte count followed by exactly that many bytes?"""
    return len(data) >= 1 and data[0] == len(data) - 1


def decode_pdu(function: int, data: bytes) -> dict[str, Any]:
    """Named fields for function ``function`` with ``data`` (the PDU after its function code)."""
    out: dict[str, Any] = {}
    code = function & 0x7F
    if code in FUNCTION_NAMES:
        out["function_name"] = FUNCTION_NAMES[code]
    if function & 0x80:
        out["exception"] = True
        if len(data) == 1:
            out["exception_code"] = data[0]
            if data[0] in EXCEPTION_NAMES:
                out["exception_name"] = EXCEPTION_NAMES[data[0]]
        return out
    if code in (1, 2, 3, 4, 23) and _counted(data) and (code in (1, 2) or len(data) % 2):
        out["direction"] = "response"
        out["byte_count"] = data[0]
        if code in (1, 2):
            out["bits"] = _bits(data[1:])
        else:
            out["registers"] = _registers(data[1:])
    elif code in (1, 2, 3, 4) and len(data) == 4:
        out.update(direction="request", start=_u16(data, 0), quantity=_u16(data, 2))
    elif code in (5, 6) and len(data) == 4:
        out.update(start=_u16(data, 0), value=_u16(data, 2))
        if code == 5:
            out["coil"] = _u16(data, 2) == 0xFF00
    elif code in (15, 16) and len(data) == 4:
        out.update(direction="response", start=_u16(data, 0), quantity=_u16(data, 2))
    elif code in (15, 16) and len(data) >= 5 and data[4] == len(data) - 5:
        out.update(direction="request", start=_u16(data, 0), quantity=_u16(data, 2), byte_count=data[4])
        if code == 15:
            out["bits"] = _bits(data[5:])[: _u16(data, 2)]
        else:
            out["registers"] = _registers(data[5:])
    elif code == 23 and len(data) >= 9 and data[8] == len(data) - 9:
        out.update(
            direction="request",
            read_start=_u16(data, 0),
            read_quantity=_u16(data, 2),
            write_start=_u16(data, 4),
            write_quantity=_u16(data, 6),
            byte_count=data[8],
            registers=_registers(data[9:]),
        )
    return out
