"""Starting and stopping a connection's RFC 2217 mirror (``open(mirror="rfc2217")``, and
``configure(connection_id=…, defaults={"mirror": "rfc2217" | null})`` on a live connection)."""

from __future__ import annotations

import ipaddress
import urllib.parse
from typing import TYPE_CHECKING

import anyio

from serial_mcp import messages
from serial_mcp.errors import ErrorCode, InvalidArgument, SerialMcpError
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.manager import ConnectionManager

if TYPE_CHECKING:
    from serial_mcp.serial.rfc2217_mirror import Rfc2217Mirror

RFC2217_KINDS = ("rfc2217", "rfc2217+esp-reset")  # +esp-reset: opt-in, see serial/rfc2217_port.py
MIRROR_KINDS = ("ro", "rw", *RFC2217_KINDS)


def check_mirror(value: object) -> None:
    if value is not None and value not in MIRROR_KINDS:
        raise InvalidArgument(messages.MIRROR_BAD_KIND.format(value=str(value)[:80]))


def start_rfc2217(conn: Connection, read_only: bool, kind: str = "rfc2217") -> Rfc2217Mirror:
    """Serve ``conn`` on a loopback TCP port (once: a second call returns the running mirror)."""
    if conn.rfc2217 is not None:
        mirror: Rfc2217Mirror = conn.rfc2217
        mirror.esp_reset = kind == "rfc2217+esp-reset"  # from the next client on
        return mirror
    from serial_mcp.serial.rfc2217_mirror import Rfc2217Mirror  # the first mirror loads it (issue 27)

    mirror = Rfc2217Mirror(conn, read_only=read_only, esp_reset=kind == "rfc2217+esp-reset")
    conn.rfc2217 = mirror
    conn.closers.append(mirror.close)
    return mirror


async def stop_rfc2217(conn: Connection) -> None:
    """End the mirror (its client is let go, the connection's settings come back)."""
    mirror = conn.rfc2217
    if mirror is None:
        return
    conn.rfc2217 = None
    if mirror.close in conn.closers:
        conn.closers.remove(mirror.close)
    await anyio.to_thread.run_sync(mirror.close)


def refuse_own_mirror(manager: ConnectionManager, port: str) -> None:
    """Opening one of this server's own mirrors would write to that connection's device through a
    door of its own, past its owner and its ``port_lent``: refused (``not_allowed``), naming it."""
    if not port.lower().startswith("rfc2217://"):
        return
    try:
        url = urllib.parse.urlsplit(port)
        host, number = url.hostname or "", url.port
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:  # not a host and port this could be: the opener says what is wrong
        return
    if not loopback or number is None:
        return
    for conn in manager.list():
        mirror = conn.rfc2217
        if mirror is not None and mirror.port == number:
            raise SerialMcpError(
                ErrorCode.NOT_ALLOWED, messages.MIRROR_OWN.format(url=mirror.url, id=conn.id)
            )


def check_configure(value: object) -> None:
    if value not in (*RFC2217_KINDS, None):
        raise InvalidArgument(messages.MIRROR_CONFIGURE_BAD.format(value=str(value)[:80]))


async def configure_mirror(conn: Connection, value: object, read_only: bool) -> None:
    """``configure``'s live ``mirror`` key: ``"rfc2217"`` starts one, ``null`` ends it."""
    check_configure(value)
    if isinstance(value, str):
        start_rfc2217(conn, read_only, value)
    else:
        await stop_rfc2217(conn)
