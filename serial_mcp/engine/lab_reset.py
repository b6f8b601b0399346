"""``capture_boot``'s lab resets (issue 25): a labgrid place's power cycle and reset line.

``{"power": "cycle", "off_ms": 1000}`` switches the place's power off, waits ``off_ms``, and only then
is the capture armed (the mark) and the power switched on, all under the connection's line lock: the
board's first boot byte is after the mark, nothing of the dying board before it is. ``{"digital_output":
"reset", "hold_ms": 100}`` (or ``true`` for the place's one output) asserts the output for ``hold_ms``
after the mark, then de-asserts it. Both are switched by labgrid's drivers (``serial.labgrid_power``)
on a worker thread; a port that is not a labgrid place is refused before anything is touched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, Required

import anyio
from pydantic import Field, Strict, TypeAdapter
from typing_extensions import TypedDict  # pydantic validates it on Python 3.11 too

from serial_mcp import messages
from serial_mcp.core.unknown_keys import keyed
from serial_mcp.errors import DeviceError, ErrorCode, InvalidArgument
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.handle import LabControls

MAX_OFF_MS = 60_000
DEFAULT_OFF_MS = 1000
MAX_HOLD_MS = 10_000
NonEmpty = Annotated[str, Strict(), Field(min_length=1)]


class PowerCycle(TypedDict, total=False):
    """``{"power": "cycle", "off_ms": 1000, "name": SWITCH}``: off, wait, arm the capture, on."""

    power: Required[Literal["cycle"]]
    off_ms: Annotated[int, Strict(), Field(ge=0, le=MAX_OFF_MS)]
    name: NonEmpty | None


class OutputPulse(TypedDict, total=False):
    """``{"digital_output": NAME | true, "hold_ms": 100}``: the reset line, held after the mark."""

    digital_output: Required[Annotated[bool, Strict()] | NonEmpty]  # true: the place's only output
    hold_ms: Annotated[int, Strict(), Field(ge=1, le=MAX_HOLD_MS)]


TEXTS = {
    "power": messages.LAB_RESET_POWER,
    "off_ms": messages.LAB_RESET_OFF_MS.format(max=MAX_OFF_MS),
    "name": messages.LAB_RESET_NAME,
    "digital_output": messages.LAB_RESET_OUTPUT,
    "hold_ms": messages.RESET_HOLD.format(max=MAX_HOLD_MS),
}
_CHECKS: dict[type[Any], TypeAdapter[Any]] = {}


def is_lab(reset: Mapping[str, object] | None) -> bool:
    return reset is not None and ("power" in reset or "digital_output" in reset)


def parse(reset: Mapping[str, object]) -> dict[str, Any]:
    """The checked lab reset (``invalid_argument`` naming what is wrong; nothing is switched)."""
    spec = PowerCycle if "power" in reset else OutputPulse
    check = _CHECKS.get(spec) or _CHECKS.setdefault(
        spec, TypeAdapter(Annotated[spec, keyed(spec, "reset", messages.RESET_BAD, texts=TEXTS)])
    )
    given = check.validate_python(reset)
    if spec is PowerCycle:
        return {"power": "cycle", "off_ms": given.get("off_ms", DEFAULT_OFF_MS), "name": given.get("name")}
    output = given["digital_output"]
    if output is False:
        raise InvalidArgument(TEXTS["digital_output"])
    return {"digital_output": None if output is True else output, "hold_ms": given.get("hold_ms", 100)}


def controls(conn: Connection) -> LabControls:
    """The connection's lab controls, or ``not_supported`` for a port that is no labgrid place."""
    lab = conn.lines.lab_controls()
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
