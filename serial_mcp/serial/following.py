"""Following a USB device across re-enumeration: each reopen finds it by identity, not by path.

A native-USB board (ESP32-S3/C3 USB-Serial-JTAG, RP2040, nRF52840, STM32 VCP, Arduino Leonardo)
drops off the bus on every reset and may come back as another node (``ttyACM0`` -> ``ttyACM1``).
``Follower`` is the connection's ``reopen``: it asks the injected port enumerator where the device
is now, opens that node, and keeps it in ``path`` (the connection then reports the move). Another
board on the old node (another serial number, or a bootloader's USB ID) is never taken.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from serial_mcp import messages
from serial_mcp.core.identity import Identity, describe_device, identity_of, locate
from serial_mcp.core.port_info import PortInfo
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import ErrorCode, PortError
from serial_mcp.serial.handle import PortHandle

PortLister = Callable[[], list[PortInfo]]
OpenPath = Callable[[str, SerialSettings], PortHandle]


class Follower:
    """``reopen(settings)`` for a connection on a USB device with an identity (see ``can_follow``)."""

    def __init__(self, identity: Identity, path: str, lister: PortLister, open_path: OpenPath) -> None:
        self.identity = identity
        self.path = path  # where the device was last opened
        self._lister = lister
        self._open = open_path

    @property
    def device(self) -> str:
        return describe_device(self.identity)

    def __call__(self, settings: SerialSettings) -> PortHandle:
        ports = self._lister()
        found = locate(self.identity, ports)
        if not found:
            raise PortError(ErrorCode.PORT_NOT_FOUND, self._absent(ports))
        if len(found) > 1:
            names = ", ".join(p.name for p in found)
            raise PortError(
                ErrorCode.PORT_AMBIGUOUS, messages.FOLLOW_AMBIGUOUS.format(device=self.device, ports=names)
            )
        here = found[0].name
        if os.path.realpath(here) == os.path.realpath(self.path):
            here = self.path  # a /dev/serial/by-id link that follows the device itself is kept
        handle = self._open(here, settings)
        self.path = here
        return handle

    def _absent(self, ports: list[PortInfo]) -> str:
        """Why the device was not taken: off the bus, or another device sits on its old node."""
        there = next((p for p in ports if p.name == self.path), None)
        if there is None:
            return messages.FOLLOW_ABSENT.format(device=self.device, path=self.path)
        other = identity_of(there)
        unit = f" serial {other.serial_number}" if other.serial_number else ""
        now = f"usb {other.vid}:{other.pid}{unit}"
        return messages.FOLLOW_OTHER_DEVICE.format(device=self.device, path=self.path, other=now)
