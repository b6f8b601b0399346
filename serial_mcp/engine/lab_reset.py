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
from serial_mcp.errors import DeviceError, ErrorCode, InvalidArgument, Short
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.handle import LabControls

MAX_OFF_MS = 60_000
DEFAULT_OFF_MS = 1000
MAX_HOLD_MS = 10_000
DEFAULT_HOLD_MS = 100
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


class LinePulse(TypedDict, total=False):
    """``{"dtr": false, "rts": true, "hold_ms": 100}``: the levels held ``hold_ms``, then restored."""

    dtr: Annotated[bool, Strict()] | None
    rts: Annotated[bool, Strict()] | None
    hold_ms: Annotated[int, Strict(), Field(ge=1, le=MAX_HOLD_MS)]
    kind: Literal["lines"]


class Touch(TypedDict):
    """``{"kind": "1200bps_touch"}``: a 1200 baud open and close (the bootloader of a native-USB board)."""

    kind: Literal["1200bps_touch"]


ResetSpec = LinePulse | Touch | PowerCycle | OutputPulse
KINDS = ("lines", "1200bps_touch")
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


def check(value: object) -> ResetSpec | None:
    """``capture_boot``'s ``reset`` checked by the type its keys pick, each fault in its own words
    (the option's validator: a bad reset is refused as the options are built)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidArgument(messages.RESET_BAD)
    if is_lab(value):
        spec: type[Any] = PowerCycle if "power" in value else OutputPulse
    elif set(value) - set(LinePulse.__annotations__):
        spec = LinePulse  # its check names the unknown key
    elif (kind := value.get("kind", "lines")) == "1200bps_touch":
        if len(value) > 1:
            others = ", ".join(sorted(k for k in value if k != "kind"))
            raise InvalidArgument(messages.RESET_TOUCH_ALONE.format(keys=others))
        spec = Touch
    elif kind != "lines":
        raise InvalidArgument(messages.RESET_KIND_BAD.format(value=Short(kind)))
    elif value.get("dtr") is None and value.get("rts") is None:
        raise InvalidArgument(messages.RESET_NO_LINE)
    else:
        spec = LinePulse
    if (adapter := _CHECKS.get(spec)) is None:
        form: Any = Annotated[
            spec, keyed(spec, "reset", messages.RESET_BAD, texts=TEXTS)
        ]  # built at run time
        adapter = _CHECKS.setdefault(spec, TypeAdapter(form))
    if value.get("digital_output", True) is False:  # no output named: only true says "the one"
        raise InvalidArgument(TEXTS["digital_output"])
    given: ResetSpec = adapter.validate_python(value)
    return given


def filled(reset: Mapping[str, object]) -> dict[str, Any]:
    """A checked reset with its defaults: ``{dtr, rts, hold_ms}``, ``{kind}``, ``{power, off_ms,
    name}`` or ``{digital_output, hold_ms}`` (``None``: the place's one output)."""
    hold = reset.get("hold_ms", DEFAULT_HOLD_MS)
    if "power" in reset:
        return {"power": "cycle", "off_ms": reset.get("off_ms", DEFAULT_OFF_MS), "name": reset.get("name")}
    if "digital_output" in reset:
        output = reset["digital_output"]
        return {"digital_output": None if output is True else output, "hold_ms": hold}
    if reset.get("kind") == "1200bps_touch":
        return {"kind": "1200bps_touch"}
    return {"dtr": reset.get("dtr"), "rts": reset.get("rts"), "hold_ms": hold}


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
