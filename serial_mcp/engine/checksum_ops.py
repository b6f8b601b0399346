"""The checksum operation: any algorithm of the catalogue over bytes given as text, hex or base64."""

from __future__ import annotations

from serial_mcp.core import checksums
from serial_mcp.core.encoding import decode_input
from serial_mcp.engine import results


def compute_checksum(data: str, algorithm: str, encoding: str | None = None) -> results.ChecksumResult:
    raw = decode_input(data, encoding or "utf8")
    value = checksums.compute(algorithm, raw)
    width = checksums.width_bytes(algorithm)
    return results.ChecksumResult(
        algorithm=checksums.canonical_name(algorithm),
        checksum=value,
        checksum_hex=f"{value:0{width * 2}x}",
        width_bytes=width,
    )
