"""Port discovery: what serial ports this machine has, with their USB identity."""

from __future__ import annotations

from serial_mcp.core.port_info import PortInfo

__all__ = ["PortInfo", "list_system_ports"]


def _hex4(v: int | None) -> str | None:
    return None if v is None else f"{v:04x}"


def list_system_ports() -> list[PortInfo]:
    """Ports from pyserial's ``comports`` (USB-serial, ACM, native UARTs), sorted by name."""
    from serial.tools import list_ports  # only a request that lists ports loads it (issue 27: idle memory)

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
