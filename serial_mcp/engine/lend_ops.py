"""``lend``: release a connection's device node to another program and take it back (issue 23.2).

For programs that need the path itself (arduino-cli, avrdude, dfu-util, stm32flash): ``release``
closes the OS handle but keeps the connection; ``reclaim`` reopens it now; ``status`` looks. A
released port also comes back by itself (``serial.lending``). While it is released, reads and
writes are refused with ``port_released``, which says how to get it back.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from serial_mcp import messages
from serial_mcp.core.lend_watch import DEFAULT_LEND_MS, MAX_LEND_MS
from serial_mcp.engine.access import Caller
from serial_mcp.engine.options import LendOptions
from serial_mcp.engine.services import Services
from serial_mcp.errors import ErrorCode, InvalidArgument, PortError, Short
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.lending import Lend


class LendResult(BaseModel):
    connection_id: str
    port: str
    state: str
    end_offset: int  # the RX live edge: what the board sends after a reclaim starts here
    lend: dict[str, Any] | None = None  # while released: watching, borrowers_seen, reclaim_in_ms

    def summary(self) -> str:
        if self.state == "released" and self.lend is not None:
            watching = bool(self.lend.get("watching"))
            return messages.S_LEND_RELEASED.format(
                id=self.connection_id,
                port=self.port,
                offset=self.end_offset,
                watch=messages.S_LEND_WATCHING if watching else messages.S_LEND_NOT_WATCHING,
                ms=self.lend.get("reclaim_in_ms"),
            )
        return messages.S_LEND_STATE.format(
            id=self.connection_id, port=self.port, state=self.state, offset=self.end_offset
        )


def _timeout_s(value: int | None) -> float:
    if value is None:
        return DEFAULT_LEND_MS / 1000
    if not 1 <= value <= MAX_LEND_MS:  # a whole number: LendOptions is typed
        raise InvalidArgument(
            messages.LEND_TIMEOUT_BAD.format(value=Short(value), max=MAX_LEND_MS, default=DEFAULT_LEND_MS)
        )
    return value / 1000


async def lend(svc: Services, caller: Caller, connection_id: str, opts: LendOptions) -> LendResult:
    """``lend(action="release"|"reclaim"|"status", timeout_ms)``."""
    if opts.action == "status":
        conn = svc.connection(caller, connection_id)
        if opts.timeout_ms is not None:
            raise InvalidArgument(messages.LEND_TIMEOUT_NOT_RELEASE)
        return _result(conn)
    conn = svc.writing(caller, connection_id, "lend")
    if opts.action == "release":
        timeout_s = _timeout_s(opts.timeout_ms)
        if conn.state != "open":
            advice = messages.LEND_NOT_OPEN_RELEASED if conn.state == "released" else ""
            raise PortError(
                ErrorCode.NOT_CONNECTED,
                messages.LEND_NOT_OPEN.format(id=conn.id, state=conn.state, advice=advice),
                connection_id=conn.id,
            )
        await Lend(conn, timeout_s).start()
        return _result(conn)
    if opts.timeout_ms is not None:
        raise InvalidArgument(messages.LEND_TIMEOUT_NOT_RELEASE)
    if conn.lend is not None:
        await conn.lend.reclaim("reclaim")
    # else already back (the watch or the timeout was first) or never lent: nothing to do, so a
    # script can reclaim right after its flasher exits without racing the watch
    return _result(conn)


def _result(conn: Connection) -> LendResult:
    return LendResult(
        connection_id=conn.id,
        port=conn.port,
        state=conn.state,
        end_offset=conn.rx_end(),
        lend=conn.lend.status() if conn.lend is not None else None,
    )
