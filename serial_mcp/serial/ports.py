"""Port discovery: what serial ports this machine has, with their USB identity."""

from __future__ import annotations

from dataclasses import dataclass

from serial.tools import list_ports


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


def _hex4(v: int | None) -> str | None:
    return None if v is None else f"{v:04x}"


def list_system_ports() -> list[PortInfo]:
    """Ports from pyserial's ``comports`` (USB-serial, ACM, native UARTs), sorted by name."""
    out: list[PortInfo] = []
    for p in list_ports.comports(include_links=False):
        usb = p.vid is not None
        out.append(
            PortInfo(
                name=p.device,
                description=None if p.description in (None, "n/a") else p.description,
                hwid=None if p.hwid in (None, "n/a") else p.hwid,
                vid=_hex4(p.vid),
                pid=_hex4(p.pid),
                serial_number=p.serial_number,
                manufacturer=p.manufacturer,
                product=p.product,
                interface=p.interface,
                location=p.location,
                transport="usb" if usb else "native",
            )
        )
    return sorted(out, key=lambda p: p.name)
