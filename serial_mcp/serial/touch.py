"""Arduino's 1200-baud touch: a reset for native-USB boards (Leonardo, Micro, Zero, MKR, Nano 33).

Opening the port at 1200 baud and dropping DTR tells the board's USB stack to jump to its
bootloader; the board leaves the bus and comes back, as the bootloader (another USB ID, which the
connection's identity does not match, so it is not taken) and then as the sketch again. The
connection's handle is closed first, the touch is done on a handle of its own (through the same
opener), and the reconnect loop brings the port back: offsets carry on.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio

from serial_mcp import messages
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import DeviceError, ErrorCode
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.handle import PortHandle

TOUCH_BAUD = 1200


def _touch(reopen: Callable[[SerialSettings], PortHandle], settings: SerialSettings) -> None:
    handle = reopen(settings.updated(baud_rate=TOUCH_BAUD))
    try:
        handle.set_dtr(False)
    finally:
        handle.close()


async def touch_1200(conn: Connection) -> None:
    """Do the touch on ``conn``'s port and leave it reconnecting (its policy, or the default one)."""
    reopen = conn.reopener
    if reopen is None:
        raise DeviceError(
            ErrorCode.NOT_SUPPORTED, messages.TOUCH_UNSUPPORTED.format(id=conn.id), connection_id=conn.id
        )
    await conn.detach("reconnecting", "touch_1200", port=conn.port, baud_rate=TOUCH_BAUD)
    try:
        await anyio.to_thread.run_sync(_touch, reopen, conn.settings)
    except Exception as exc:  # the board may already be gone: the reconnect still waits for it
        conn.last_error = messages.TOUCH_FAILED.format(error=exc)
        conn.record("error", message=conn.last_error)
    conn.keep_reconnecting()
