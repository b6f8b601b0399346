"""Starting and stopping a connection's RFC 2217 mirror (``open(mirror="rfc2217")``, and
``configure(connection_id=…, defaults={"mirror": "rfc2217" | null})`` on a live connection)."""

from __future__ import annotations

import ipaddress
import os
import socket
import stat
from typing import TYPE_CHECKING, Any

import anyio

from serial_mcp import messages
from serial_mcp.core.port_url import NETWORK_SCHEMES, parse_port, scheme_of
from serial_mcp.engine.access import NOBODY
from serial_mcp.errors import AccessError, ErrorCode, InvalidArgument, SerialMcpError
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
    conn.attach_mirror(mirror, rfc2217=True)
    return mirror


async def stop_rfc2217(conn: Connection) -> None:
    """End the mirror (its client is let go, the connection's settings come back)."""
    mirror = conn.detach_rfc2217()
    if mirror is None:
        return
    await anyio.to_thread.run_sync(mirror.close)


async def refuse_own_mirror(manager: ConnectionManager, port: str, caller_key: str | None = None) -> None:
    """Opening one of this server's own mirrors would reach that connection's device through a door
    of its own, past its owner and its ``port_lent``: refused (``not_allowed``), naming the mirror
    and its owner. A network URL whose host resolves (as pyserial will) to an address of this host
    and whose port a mirror listens on, however it is spelled; a device path that is a mirror's PTY."""
    doors = [(conn.id, conn.owner, conn.rfc2217, conn.mirror) for conn in manager.list()]
    if not any(rfc or pty for _, _, rfc, pty in doors):
        return
    found = await anyio.to_thread.run_sync(_find_door, doors, port)
    if found is None:
        return
    conn_id, owner, mirror = found
    who = (
        messages.MIRROR_DOOR_YOURS
        if owner == caller_key
        else messages.MIRROR_DOOR_NOBODYS
        if owner == NOBODY
        else messages.MIRROR_DOOR_THEIRS
    )
    raise AccessError(
        ErrorCode.NOT_ALLOWED,
        messages.MIRROR_DOOR.format(port=port, mirror=mirror, id=conn_id, owner=who.format(id=conn_id)),
        mirror_of=conn_id,
        port=port,
        connection_id=conn_id,
    )


def _find_door(doors: list[tuple[str, str, Any, Any]], port: str) -> tuple[str, str, str] | None:
    """(connection id, its owner, the mirror named) when ``port`` is one of ``doors``' mirrors."""
    scheme = scheme_of(port)
    if scheme is None:
        rdev = _char_device(port)
        for conn_id, owner, _, pty in doors:
            if rdev is not None and pty is not None and pty.rdev == rdev:
                return conn_id, owner, messages.MIRROR_DOOR_PTY.format(path=pty.path)
        return None
    if scheme not in NETWORK_SCHEMES:
        return None
    try:
        target = parse_port(port)
    except SerialMcpError:  # the opener says what is wrong with it
        return None
    for conn_id, owner, rfc, _ in doors:
        if rfc is not None and rfc.port == target.port and _is_this_host(target.host or "", rfc.port):
            return conn_id, owner, messages.MIRROR_DOOR_RFC2217.format(url=rfc.url)
    return None


def _char_device(path: str) -> int | None:
    try:
        st = os.stat(path)  # through any link: the device it names now
    except (OSError, ValueError):
        return None
    return st.st_rdev if stat.S_ISCHR(st.st_mode) else None


def _is_this_host(host: str, port: int) -> bool:
    """Whether ``host`` resolves (``getaddrinfo``, as pyserial's connect does) to an address of this
    host: loopback, unspecified (0.0.0.0 and :: connect here), or one a socket can bind to."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):  # no such host: the open fails on its own
        return False
    for family, _, _, _, sockaddr in infos:
        try:
            ip = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        except ValueError:
            continue
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        if ip.is_loopback or ip.is_unspecified or _bindable(family, sockaddr):
            return True
    return False


def _bindable(family: int, sockaddr: tuple[Any, ...]) -> bool:
    """Whether ``sockaddr``'s address is one of this host's own (a socket can bind to it)."""
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((sockaddr[0], 0, *sockaddr[2:]))
    except OSError:
        return False
    return True


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
