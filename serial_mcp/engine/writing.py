"""The write path: the exact bytes of a call, its pacing and deadline, the TX turn and the write.

A write queues behind earlier writes (the connection's TX turn), is logged as it starts and stops
at its deadline; ``write`` is the plain write, ``tx_turn`` and ``write_all`` the transact's.
"""

from __future__ import annotations

import anyio

from serial_mcp import messages
from serial_mcp.core.encoding import decode_input
from serial_mcp.core.framing.config import build_encoder
from serial_mcp.core.pace import Pace, PaceSpec, parse_pace
from serial_mcp.errors import ErrorCode, InvalidArgument, OperationTimeout, PortError, SerialMcpError, Short
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.lending import released_error
from serial_mcp.serial.tx import (
    DEFAULT_STALL_MS,
    MAX_WRITE_TIMEOUT_MS,
    TxBusy,
    TxTurn,
    WriteOutcome,
    write_budget_s,
)


def payload(data: str, encoding: str | None, tx_framing: object = None) -> bytes:
    """The exact bytes to send: decoded from the tool's text, then framed (if a TX framing applies)."""
    raw = decode_input(data, encoding or "utf8")
    if tx_framing is not None:
        raw = build_encoder(tx_framing).encode(raw)
    if not raw:
        raise InvalidArgument(messages.WRITE_EMPTY)
    return raw


def pace_for(conn: Connection, pace: PaceSpec | None) -> Pace | None:
    """The call's pacing, else the connection default."""
    if pace is not None:
        return parse_pace(pace)
    return conn.options.pace


def require_open(conn: Connection) -> None:
    if conn.state == "released":
        raise released_error(conn)
    if conn.state != "open":
        raise PortError(
            ErrorCode.NOT_CONNECTED,
            messages.NOT_CONNECTED.format(
                id=conn.id,
                state=conn.state,
                error=conn.last_error or "-",
                advice=messages.NOT_CONNECTED_RECONNECTING
                if conn.state == "reconnecting"
                else messages.NOT_CONNECTED_GONE,
            ),
            connection_id=conn.id,
        )


def write_budget(conn: Connection, data: bytes, pace: Pace | None, timeout_ms: int | None) -> float:
    """The write's deadline in seconds (validated ``timeout_ms``, else the default plus wire time)."""
    if timeout_ms is not None and (
        isinstance(timeout_ms, bool)
        or not isinstance(timeout_ms, int)
        or not 1 <= timeout_ms <= MAX_WRITE_TIMEOUT_MS
    ):
        raise InvalidArgument(
            messages.WRITE_BAD_TIMEOUT.format(value=Short(timeout_ms), max=MAX_WRITE_TIMEOUT_MS)
        )
    return write_budget_s(len(data), conn.settings.baud_rate, pace, timeout_ms)


async def write(
    conn: Connection,
    data: bytes,
    pace: Pace | None = None,
    timeout_s: float | None = None,
    stall_s: float | None = None,
) -> WriteOutcome:
    """Queue behind earlier writes and write, all within ``timeout_s`` (default: ``write_budget``);
    the write ends early once the device took no byte for ``stall_s`` (default: the TX default)."""
    require_open(conn)
    budget = write_budget(conn, data, pace, None) if timeout_s is None else timeout_s
    deadline = anyio.current_time() + budget
    try:
        async with conn.tx.turn(budget):
            return await write_locked(conn, data, pace, max(0.0, deadline - anyio.current_time()), stall_s)
    except TxBusy:
        return WriteOutcome(0, timed_out=True)


def tx_turn(conn: Connection, data: bytes, budget: float) -> TxTurn:
    """The TX turn for a transact (``async with``): waiting longer than ``budget`` is ``write_timeout``."""
    return conn.tx.turn(budget, busy=lambda: _stopped(conn, data, budget, 0))


async def write_all(conn: Connection, data: bytes, pace: Pace | None, budget: float) -> int:
    """``write_locked`` for a transact: a write that stops at its deadline is ``write_timeout``
    (with the count that went out), and nothing is read."""
    out = await write_locked(conn, data, pace, budget)
    if out.timed_out:
        raise _stopped(conn, data, budget, out.bytes_written, out.stalled)
    return out.bytes_written


def _stopped(
    conn: Connection, data: bytes, budget: float, written: int, stalled: bool = False
) -> SerialMcpError:
    template = messages.WRITE_STOPPED_STALLED if stalled else messages.WRITE_STOPPED_TIMEOUT
    ms = DEFAULT_STALL_MS if stalled else round(budget * 1000)
    text = template.format(id=conn.id, ms=ms, written=written, total=len(data))
    return OperationTimeout(ErrorCode.WRITE_TIMEOUT, text)


async def write_locked(
    conn: Connection, data: bytes, pace: Pace | None, budget: float, stall_s: float | None = None
) -> WriteOutcome:
    """Write with the TX turn held, within ``budget`` seconds; an OS error marks the connection lost
    and becomes ``io_error``; a device that stops taking data ends the write at its deadline
    (``timed_out``, bytes counted).

    The tx event is logged as the write starts, so a fast reply is never logged before its command.
    """
    try:
        out = await conn.send(data, pace, budget, stall_s)
    except TimeoutError as exc:
        raise OperationTimeout(
            ErrorCode.WRITE_TIMEOUT, messages.WRITE_TIMEOUT.format(id=conn.id), connection_id=conn.id
        ) from exc
    except OSError as exc:
        conn.note_write_error(exc)
        raise PortError(
            ErrorCode.IO_ERROR, messages.WRITE_FAILED.format(id=conn.id, error=exc), connection_id=conn.id
        ) from exc
    if out.closed:  # close() ended it: the port is gone, whatever the device did
        raise PortError(
            ErrorCode.CONNECTION_CLOSED, messages.CONNECTION_CLOSED.format(id=conn.id), connection_id=conn.id
        )
    return out
