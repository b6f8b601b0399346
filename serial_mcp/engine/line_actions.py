"""Actions on a connection's lines and settings that several operations share: set DTR/RTS, pulse
them for a reset (capture_boot), apply settings live with rollback (reconfigure, set_flow_control,
detect_baud, configure). Line levels are always restored, even on error or cancellation.
"""

from __future__ import annotations

from typing import Any

import anyio

from serial_mcp import messages
from serial_mcp.core.settings import SerialSettings
from serial_mcp.engine import results, writing
from serial_mcp.errors import DeviceError, ErrorCode
from serial_mcp.serial.connection import Connection


async def apply_settings(conn: Connection, new: SerialSettings) -> results.ReconfigureResult:
    """Apply settings live; if the driver refuses, put the old ones back and say so."""
    writing.require_open(conn)
    old = conn.settings
    async with conn.tx.turn():  # not in the middle of a write
        try:
            await anyio.to_thread.run_sync(conn.lines.apply_settings_blocking, new)
        except Exception as exc:  # drivers raise termios.error, SerialException, OSError, ValueError
            try:
                await anyio.to_thread.run_sync(conn.lines.apply_settings_blocking, old)
            except Exception:  # best effort; the error below says what happened
                pass
            raise DeviceError(
                ErrorCode.SETTINGS_REJECTED, messages.SETTINGS_REJECTED.format(error=exc)
            ) from exc
    conn.use_settings(new)
    return results.ReconfigureResult(connection_id=conn.id, settings=new.as_dict(), previous=old.as_dict())


async def pulse_lines(conn: Connection, pulse: dict[str, Any]) -> None:
    """Drive the reset levels for ``hold_ms``, then restore the previous levels — always, even on
    error or cancellation (restoring is shielded)."""
    previous = {"dtr": conn.lines.dtr, "rts": conn.lines.rts}
    try:
        await set_lines(conn, pulse["dtr"], pulse["rts"])
        await anyio.sleep(pulse["hold_ms"] / 1000)
    finally:
        with anyio.CancelScope(shield=True):
            restore = {
                k: (True if previous[k] is None else previous[k]) for k in previous if pulse[k] is not None
            }
            await set_lines(conn, restore.get("dtr"), restore.get("rts"))


async def set_lines(conn: Connection, dtr: bool | None, rts: bool | None) -> None:
    """Set DTR and/or RTS (None = leave alone), record it, remember the levels."""
    await anyio.to_thread.run_sync(conn.lines.set_blocking, dtr, rts)
    conn.lines.levels_set(dtr, rts)
    conn.record("control", dtr=dtr, rts=rts)
