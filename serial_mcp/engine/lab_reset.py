"""``capture_boot``'s lab resets (issue 25): a labgrid place's power cycle and reset line.

``{"power": "cycle", "off_ms": 1000}`` switches the place's power off, waits ``off_ms``, and only then
is the capture armed (the mark) and the power switched on, all under the connection's line lock: the
board's first boot byte is after the mark, nothing of the dying board before it is. ``{"digital_output":
"reset", "hold_ms": 100}`` (or ``true`` for the place's one output) asserts the output for ``hold_ms``
after the mark, then de-asserts it. Both are switched by labgrid's drivers (``serial.labgrid_power``)
on a worker thread; a port that is not a labgrid place is refused before anything is touched.
"""

from __future__ import annotations

from typing import Any

import anyio

from serial_mcp import messages
from serial_mcp.core.unknown_keys import reject_unknown_keys
from serial_mcp.errors import DeviceError, ErrorCode, InvalidArgument
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.handle import LabControls

MAX_OFF_MS = 60_000
DEFAULT_OFF_MS = 1000
MAX_HOLD_MS = 10_000
POWER_KEYS = ("power", "off_ms", "name")
OUTPUT_KEYS = ("digital_output", "hold_ms")


def is_lab(reset: dict[str, Any] | None) -> bool:
    return reset is not None and ("power" in reset or "digital_output" in reset)


def parse(reset: dict[str, Any]) -> dict[str, Any]:
    """The checked lab reset (``invalid_argument`` naming what is wrong; nothing is switched)."""
    if "power" in reset:
        reject_unknown_keys(reset, POWER_KEYS, "reset")
        off = reset.get("off_ms", DEFAULT_OFF_MS)
        name = reset.get("name")
        if reset["power"] != "cycle":
            raise InvalidArgument(messages.LAB_RESET_POWER)
        if isinstance(off, bool) or not isinstance(off, int) or not 0 <= off <= MAX_OFF_MS:
            raise InvalidArgument(messages.LAB_RESET_OFF_MS.format(max=MAX_OFF_MS))
        if name is not None and (not isinstance(name, str) or not name):
            raise InvalidArgument(messages.LAB_RESET_NAME)
        return {"power": "cycle", "off_ms": off, "name": name}
    reject_unknown_keys(reset, OUTPUT_KEYS, "reset")
    output, hold = reset["digital_output"], reset.get("hold_ms", 100)
    if output is not True and (not isinstance(output, str) or not output):
        raise InvalidArgument(messages.LAB_RESET_OUTPUT)
    if isinstance(hold, bool) or not isinstance(hold, int) or not 1 <= hold <= MAX_HOLD_MS:
        raise InvalidArgument(messages.RESET_HOLD.format(max=MAX_HOLD_MS))
    return {"digital_output": None if output is True else output, "hold_ms": hold}


def controls(conn: Connection) -> LabControls:
    """The connection's lab controls, or ``not_supported`` for a port that is no labgrid place."""
    lab = conn.lab_controls()
    if lab is None:
        raise DeviceError(
            ErrorCode.NOT_SUPPORTED, messages.LAB_RESET_NOT_LAB.format(port=conn.port), port=conn.port
        )
    return lab


async def before_mark(lab: LabControls, reset: dict[str, Any]) -> None:
    """Power off and wait (a power cycle); nothing for a reset line."""
    if "power" in reset:
        await anyio.to_thread.run_sync(lab.power, False, reset["name"])
        await anyio.sleep(reset["off_ms"] / 1000)


async def after_mark(lab: LabControls, reset: dict[str, Any]) -> None:
    """Power on (the boot starts now), or pulse the reset line."""
    if "power" in reset:
        await anyio.to_thread.run_sync(lab.power, True, reset["name"])
        return
    name = reset["digital_output"]
    await anyio.to_thread.run_sync(lab.digital_output, True, name)
    try:
        await anyio.sleep(reset["hold_ms"] / 1000)
    finally:
        with anyio.CancelScope(shield=True):  # never leave the board held in reset
            await anyio.to_thread.run_sync(lab.digital_output, False, name)
