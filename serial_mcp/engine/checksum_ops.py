"""The checksum operation: any algorithm of the catalogue over bytes given as text, hex or base64."""

from __future__ import annotations

from serial_mcp import messages
from serial_mcp.core import checksums
from serial_mcp.core.encoding import decode_input
from serial_mcp.engine import results
from serial_mcp.engine.access import Caller
from serial_mcp.engine.options import ChecksumOptions
from serial_mcp.engine.services import Services
from serial_mcp.errors import InvalidArgument


async def compute_checksum(
    svc: Services, caller: Caller, target: None, opts: ChecksumOptions
) -> results.ChecksumResult:
    """The checksum of ``data``, as a number and as the bytes a frame carries (``byte_order``:
    big, the default, or little — CRC-16/MODBUS goes on the wire little-endian)."""
    return checksum(opts.data, opts.algorithm, opts.encoding, opts.byte_order)


def checksum(
    data: str, algorithm: str, encoding: str | None = None, byte_order: str | None = None
) -> results.ChecksumResult:
    """``compute_checksum`` on plain values (the CLI's ``checksum`` and tests)."""
    order = byte_order or "big"
    if order not in ("big", "little"):
        raise InvalidArgument(messages.CHECKSUM_BAD_ORDER.format(value=str(order)[:80]))
    raw = decode_input(data, encoding or "utf8")
    value = checksums.compute(algorithm, raw)
    width = checksums.width_bytes(algorithm)
    return results.ChecksumResult(
        algorithm=checksums.canonical_name(algorithm),
        checksum=value,
        checksum_hex=f"{value:0{width * 2}x}",
        width_bytes=width,
        wire_hex=value.to_bytes(width, "little" if order == "little" else "big").hex(),
        byte_order=order,
    )
