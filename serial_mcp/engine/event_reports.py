"""Detected events at the operations' edge (issue 24): the firmware ELF of a connection and the
``events`` view of the Python API (the events a result lists for its caller are ``read_shape``'s).

Detection itself runs in the connection's :class:`~serial_mcp.serial.event_watch.EventWatch`; this
module only reads what it found, and loads an ELF (in a worker thread, under the file rules of
:mod:`serial_mcp.serial.firmware_elf`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from serial_mcp.engine.access import Caller
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.firmware_elf import LoadedElf, load_elf

if TYPE_CHECKING:
    from serial_mcp.engine.services import Services


async def load(svc: Services, name: str) -> LoadedElf:
    """Parse the ELF ``name`` in a worker thread (cached per path and mtime); errors are the caller's."""
    return await anyio.to_thread.run_sync(load_elf, name, svc.elf_scope)


async def set_elf(svc: Services, conn: Connection, name: str | None) -> None:
    """``configure(..., {"elf": name})``: decode this connection's next events with ``name`` (None: stop)."""
    conn.events.use_elf(None if name is None else await load(svc, name))


def events(svc: Services, caller: Caller, connection_id: str, since: int = 0) -> list[dict[str, Any]]:
    """Every kept event after ``since`` (their ``seq``), in full: kind, family, offsets, reason, pc,
    backtrace and its decoded frames. Does not change what results show as new."""
    conn = svc.connection(caller, connection_id)
    return [e.as_dict() for e in conn.events.events(since)]
