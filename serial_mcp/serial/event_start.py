"""``read(from="last_boot" | {"event": SEQ})`` (issue 38.3): a read that starts where an event did.

The connection's event watch numbers every event it finds (``seq``) and keeps the last ones with
their offsets. ``"last_boot"`` is the start of the newest boot it has seen, ``{"event": N}`` the start
of event N: "the boot after the flash" is one call. The watch is let catch up with the bytes already
received first, so a boot printed just now is found. A bare integer stays an offset.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from serial_mcp import messages
from serial_mcp.errors import InvalidArgument
from serial_mcp.serial.read_request import FromEvent, ReadRequest

if TYPE_CHECKING:
    from serial_mcp.serial.connection import Connection

__all__ = ["pin_event_start"]


async def pin_event_start(conn: Connection, req: ReadRequest) -> ReadRequest:
    """``req`` with an event-relative ``from`` replaced by that event's offset (others as they are)."""
    where = req.from_
    if where != "last_boot" and not isinstance(where, FromEvent):
        return req
    await conn.events.settle(conn.rx_end())
    seen = conn.events.events()
    if isinstance(where, FromEvent):
        found = next((e for e in seen if e.seq == where.seq), None)
        if found is None:
            kept = f"{seen[0].seq}..{seen[-1].seq}" if seen else "none"
            raise InvalidArgument(messages.READ_FROM_NO_EVENT.format(seq=where.seq, kept=kept))
    else:
        found = next((e for e in reversed(seen) if e.event.kind == "boot"), None)
        if found is None:
            raise InvalidArgument(messages.READ_FROM_NO_BOOT.format(n=len(seen)))
    return req._replace(from_=found.event.offset)
