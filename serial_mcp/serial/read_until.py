"""``read(until=[...])``: the event kinds a read ends on, and where it ends (issue 24).

A read with ``until`` ends on the first event of those kinds that ends after its start, or that the
connection's event watch found while it ran (its bytes were read, by an earlier read, before it was
complete): at the end of that event's lines and their line end. ``reset`` also ends on a boot: a reset
nobody announced (a watchdog, a brownout, the button) only shows as the next boot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from serial_mcp import messages
from serial_mcp.errors import InvalidArgument, Short

if TYPE_CHECKING:
    from serial_mcp.serial.connection import Connection
    from serial_mcp.serial.reader import ReadRequest

__all__ = ["past_line_end", "until_cut", "until_kinds"]


def until_kinds(until: Any) -> frozenset[str] | None:
    """``until``'s event kinds, checked (the typed options check them too; this guards other callers)."""
    if until is None:
        return None
    from serial_mcp.core.events import KINDS  # the detector's package: loaded by the first port opened

    if isinstance(until, str) or not all(isinstance(k, str) and k in KINDS for k in until):
        raise InvalidArgument(messages.READ_BAD_UNTIL.format(value=Short(until), allowed=", ".join(KINDS)))
    kinds = set(until)
    if "reset" in kinds:  # a reset nobody announced (watchdog, brownout, the button) shows as the next boot
        kinds.add("boot")
    return frozenset(kinds) or None


async def until_cut(conn: Connection, req: ReadRequest, begin: int, seq0: int, have: int) -> int | None:
    """``_event_cut``, once the event watch has looked at the bytes this read holds (a bounded wait: it
    waits only when the watch is close behind): a read over history ends on its events, not before."""
    cut = _event_cut(conn, req, begin, seq0, have)
    if cut is None and conn.events.scanned_to < begin + have:
        await conn.events.settle(begin + have)
        cut = _event_cut(conn, req, begin, seq0, have)
    return cut


def _event_cut(conn: Connection, req: ReadRequest, begin: int, seq0: int, have: int) -> int | None:
    """Where an ``until`` read ends: the number of its bytes to keep (the event's lines and their line
    end), or None while no such event has been found. An event that ended before ``begin`` but was
    found during this read (its bytes were read before it was complete) ends the read as it stands."""
    assert req.until is not None
    hit = conn.events.first(req.until, begin, seq0)
    if hit is None:
        return None
    cut = hit.event.end - begin
    if cut <= 0:
        return have
    if cut > have:
        return None  # its last bytes are not in this read yet
    return cut


def past_line_end(buf: bytearray, cut: int) -> int:
    """``cut`` moved past the line end that follows it (CR, LF or CRLF), when it is in ``buf``."""
    if buf[cut : cut + 2] == b"\r\n":
        return cut + 2
    return cut + 1 if cut < len(buf) and buf[cut] in (0x0D, 0x0A) else cut
