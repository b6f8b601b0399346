"""Utility tools that touch no port: compute_checksum."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from serial_mcp import messages
from serial_mcp.engine import checksum_ops, results
from serial_mcp.mcp import params
from serial_mcp.mcp.toolkit import ToolRegistry


def register(reg: ToolRegistry) -> None:
    @reg.tool(
        title="Compute a checksum", description=messages.D_COMPUTE_CHECKSUM, read_only=True, idempotent=True
    )
    async def compute_checksum(
        data: Annotated[str, Field(description=messages.P_CHECKSUM_DATA)],
        algorithm: Annotated[str, Field(description=messages.P_ALGORITHM)],
        encoding: params.EncIn = None,
        byte_order: Annotated[
            Literal["big", "little"] | None, Field(description=messages.P_BYTE_ORDER)
        ] = None,
    ) -> results.ChecksumResult:
        return checksum_ops.compute_checksum(data, algorithm, encoding, byte_order)
