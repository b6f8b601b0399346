"""Utility tools that touch no port: compute_checksum."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from serial_mcp import messages
from serial_mcp.core import checksums
from serial_mcp.core.encoding import decode_input
from serial_mcp.mcp import models, params
from serial_mcp.mcp.toolkit import ToolRegistry


def register(reg: ToolRegistry) -> None:
    @reg.tool(
        title="Compute a checksum", description=messages.D_COMPUTE_CHECKSUM, read_only=True, idempotent=True
    )
    async def compute_checksum(
        data: params.Data,
        algorithm: Annotated[str, Field(description=messages.P_ALGORITHM)],
        encoding: params.EncIn = None,
    ) -> models.ChecksumResult:
        raw = decode_input(data, encoding or "utf8")
        value = checksums.compute(algorithm, raw)
        width = checksums.width_bytes(algorithm)
        return models.ChecksumResult(
            algorithm=checksums.canonical_name(algorithm),
            checksum=value,
            checksum_hex=f"{value:0{width * 2}x}",
            width_bytes=width,
        )
