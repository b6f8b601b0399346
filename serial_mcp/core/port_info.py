"""A port as the OS (or a URL) describes it: name, USB identity, transport. Pure data."""

from __future__ import annotations

from dataclasses import dataclass

# What a port reports about the device behind it (all optional; ``core.identity`` cleans them).
USB_FIELDS = ("vid", "pid", "serial_number", "manufacturer", "product", "interface")
DEVICE_FIELDS = (*USB_FIELDS, "location", "description")


@dataclass(frozen=True, slots=True)
class PortInfo:
    """One port as the OS describes it."""

    name: str
    description: str | None
    hwid: str | None
    vid: str | None
    pid: str | None
    serial_number: str | None
    manufacturer: str | None
    product: str | None
    interface: str | None
    location: str | None
    transport: str

    @classmethod
    def virtual(cls, name: str) -> PortInfo:
        """A port known only by its name: a PTY, a URL (``socket://``, ``sim://``, ``replay://``)."""
        return cls(name=name, hwid=None, transport="virtual", **dict.fromkeys(DEVICE_FIELDS))
