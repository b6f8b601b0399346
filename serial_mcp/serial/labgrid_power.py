"""A labgrid place's power switch and digital outputs, switched through labgrid's own drivers (issue 25).

The place's acquired resources (``NetworkPowerPort``, ``HttpDigitalOutput`` …, as the coordinator
lists them now) are made into labgrid resources on a ``Target`` of their own and driven by the
driver labgrid itself binds to them (``NetworkPowerDriver`` and its ``simplerest``/``rest``/… backends,
``HttpDigitalOutputDriver`` …): no power protocol is re-implemented here. Drivers block (HTTP,
Modbus), so these calls run on worker threads (the engine calls them with ``anyio.to_thread``).

Only resources that need no exporter-side agent are driven (the table below); a place whose power
is a USB hub port or a sysfs GPIO on the exporter is refused with ``not_supported`` naming them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from serial_mcp import messages
from serial_mcp.errors import DeviceError, ErrorCode, InvalidArgument, PortError
from serial_mcp.serial.labgrid_client import ResourceView

log = logging.getLogger(__name__)

# resource class -> the labgrid driver that labgrid's own client binds to it
POWER_DRIVERS = {
    "NetworkPowerPort": "NetworkPowerDriver",
    "PDUDaemonPort": "PDUDaemonDriver",
    "TasmotaPowerPort": "TasmotaPowerDriver",
}
OUTPUT_DRIVERS = {
    "HttpDigitalOutput": "HttpDigitalOutputDriver",
    "ModbusTCPCoil": "ModbusCoilDriver",
    "WaveshareModbusTCPCoil": "WaveShareModbusCoilDriver",
    "Eth008DigitalOutput": "Eth008DigitalOutputDriver",
}


class Controls:
    """Power and digital outputs of place ``place``; ``resources`` lists its resources now."""

    def __init__(self, resources: Callable[[], list[ResourceView]], place: str) -> None:
        self.resources = resources
        self.place = place
        self._drivers: dict[tuple[str, str], Any] = {}  # (kind, resource name) -> active driver
        self._lock = threading.Lock()

    def power(self, on: bool, name: str | None = None) -> None:
        """Switch the place's power on or off (the one switch, or the one named ``name``)."""
        driver = self._driver("power", POWER_DRIVERS, name)
        try:
            driver.on() if on else driver.off()
        except Exception as exc:  # requests' HTTPError, a Modbus error …: the switch did not switch
            raise PortError(
                ErrorCode.IO_ERROR,
                messages.LABGRID_SWITCH_FAILED.format(
                    what="power", place=self.place, state="on" if on else "off", error=exc
                ),
            ) from exc

    def digital_output(self, level: bool, name: str | None = None) -> None:
        """Assert (True) or de-assert (False) a digital output of the place (a reset line)."""
        driver = self._driver("output", OUTPUT_DRIVERS, name)
        try:
            driver.set(level)
        except Exception as exc:
            raise PortError(
                ErrorCode.IO_ERROR,
                messages.LABGRID_SWITCH_FAILED.format(
                    what="digital output", place=self.place, state="high" if level else "low", error=exc
                ),
            ) from exc

    def _driver(self, kind: str, table: dict[str, str], name: str | None) -> Any:
        resources = self.resources()
        usable = [r for r in resources if r.cls in table and (name is None or r.name == name)]
        if not usable:
            held = ", ".join(f"{r.cls} {r.name}" for r in resources) or "none"
            raise DeviceError(
                ErrorCode.NOT_SUPPORTED,
                messages.LABGRID_NO_SWITCH.format(
                    what=kind,
                    place=self.place,
                    name=f" named {name!r}" if name else "",
                    resources=held,
                    supported=", ".join(table),
                ),
            )
        if len(usable) > 1:
            raise InvalidArgument(
                messages.LABGRID_SWITCH_AMBIGUOUS.format(
                    what=kind, place=self.place, names=", ".join(r.name for r in usable)
                ),
            )
        resource = usable[0]
        key = (kind, resource.name)
        with self._lock:
            cached = self._drivers.get(key)
            if cached is not None and cached[0] == (resource.args, resource.extra):
                return cached[1]
            driver = _make_driver(resource, table[resource.cls], self.place)
            self._drivers[key] = ((resource.args, resource.extra), driver)
            return driver


def _make_driver(resource: ResourceView, driver_name: str, place: str) -> Any:
    """A labgrid driver bound to a labgrid resource made from the coordinator's entry."""
    from labgrid import Target, target_factory

    target = Target(f"serial-mcp:{place}")
    made = target_factory.make_resource(target, resource.cls, resource.name, dict(resource.args))
    made.extra = dict(resource.extra)  # proxy hints, as labgrid's RemotePlace sets them
    driver = target_factory.make_driver(target, driver_name, None, {})
    target.activate(driver)
    log.debug("labgrid %s for %s bound to %s", driver_name, place, made)
    return driver
