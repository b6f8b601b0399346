"""``serial-mcp record PORT -o FILE``: record a port into a capture file until Ctrl-C or unplug.

The engine records exactly as the ``open(record=…)`` and ``record`` tools do (same recorder, same
capture format, durable on every flush); the file's directory is the engine's capture directory,
without quotas: a person recording at the bench chose the file. It is never overwritten, and its
name follows the capture store's rule (letters, digits, ``._-``, ending in ``.jsonl``).
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from serial_mcp import messages
from serial_mcp.api import PortPolicy, Quotas
from serial_mcp.commands.doors import engine
from serial_mcp.commands.holding import hold
from serial_mcp.commands.output import status
from serial_mcp.errors import Conflict, ErrorCode
from serial_mcp.store.captures import validate_name

UNLIMITED = Quotas(1 << 62, 1 << 62, 1 << 62)


def run_record(policy: PortPolicy, port: str, output: str, baud: int, note: str | None) -> int:
    """Record ``port`` into ``output`` until Ctrl-C (or the device goes away), under ``policy``."""
    return anyio.run(_record, policy, port, output, baud, note)


async def _record(policy: PortPolicy, port: str, output: str, baud: int, note: str | None) -> int:
    path = Path(output)
    # refuse before the port is touched (opening may reset a board); the store checks again, atomically
    validate_name(path.name)
    if os.path.lexists(path):
        raise Conflict(ErrorCode.CAPTURE_EXISTS, messages.CAPTURE_EXISTS.format(name=str(path)))
    async with engine(policy, capture_dir=path.parent, capture_quotas=UNLIMITED) as eng:
        conn = await eng.open(port, baud_rate=baud)
        await conn.record("start", path=path.name, note=note, from_="buffer_start")  # from its first byte
        reason = await hold(conn, lambda: status(messages.CLI_RECORDING.format(port=conn.port, path=path)))
        final = await conn.record("stop")
    status(
        messages.CLI_RECORDED.format(path=path, n=final.events_written, b=final.bytes_written, reason=reason)
    )
    return 0
