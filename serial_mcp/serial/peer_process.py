"""Who is at the other end of a loopback TCP connection: its uid (whom a mirror serves), and the
program's name and pid (so ``port_lent`` can name the client, ``program "esptool" (pid 4242)``).

Both come from /proc (Linux): the client's socket is the line of ``/proc/net/tcp`` (``tcp6`` for an
IPv6 peer) whose local end is the client's address and whose remote end is ours; its ``uid`` column
is the uid that made the socket, its inode names the socket among the processes' file descriptors.
Elsewhere, or when /proc does not say, nothing is known: ``peer_uid`` is None.

The mirrors serve their owner only (``may_attach``): the server's own uid and root (which can open
the device anyway). A peer that cannot be identified is refused unless the user asked for
``--mirror-any-user``; ``allow_any_user`` records that setting for the process (every front door
turns its settings into a policy through ``config.port_policy``, which sets it).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from serial_mcp.core.outside_text import quoted

PROC = Path("/proc")
_UID_COLUMN, _INODE_COLUMN = 7, 9
_any_user = False  # --mirror-any-user: a peer whose uid cannot be found is let in


@dataclass(frozen=True, slots=True)
class PeerSocket:
    """The client's socket, as /proc/net shows it."""

    uid: int
    inode: str


def allow_any_user(flag: bool) -> None:
    """Let the mirrors serve a peer whose uid cannot be found (``--mirror-any-user``)."""
    global _any_user
    _any_user = bool(flag)


def any_user() -> bool:
    return _any_user


def may_attach(peer: PeerSocket | None, any_user: bool | None = None) -> bool:
    """Whether a mirror serves ``peer`` (None: not identified). A socket no process holds any more
    (inode 0: its owner closed it, the kernel keeps a time-wait stub) shows uid 0 whoever made it:
    never served, so a client cannot pass as root by closing before the accept."""
    if peer is None:
        return _any_user if any_user is None else any_user
    return peer.inode != "0" and peer.uid in (0, os.geteuid())


def _hex_endpoint(host: str, port: int) -> tuple[str, str]:
    """``(table, "ADDR:PORT")`` as /proc/net/tcp or tcp6 spells an endpoint: the address in 32-bit
    words of host order (little-endian here), the port in hex."""
    addr = ipaddress.ip_address(host.split("%", 1)[0])
    packed = addr.packed
    words = "".join(f"{int.from_bytes(packed[i : i + 4], 'little'):08X}" for i in range(0, len(packed), 4))
    return ("tcp" if addr.version == 4 else "tcp6"), f"{words}:{port:04X}"


def _peer_socket(local: tuple[str, int], remote: tuple[str, int]) -> PeerSocket | None:
    """The socket whose local end is ``local`` and remote end ``remote`` (IPv4 or IPv6)."""
    table, want_local = _hex_endpoint(*local)
    _, want_remote = _hex_endpoint(*remote)
    with contextlib.suppress(OSError, ValueError), open(PROC / "net" / table) as lines:
        next(lines, None)
        for line in lines:
            fields = line.split()
            if len(fields) > _INODE_COLUMN and fields[1] == want_local and fields[2] == want_remote:
                return PeerSocket(int(fields[_UID_COLUMN]), fields[_INODE_COLUMN])
    return None


def peer_socket(sock: socket.socket) -> PeerSocket | None:
    """The far end of an accepted ``sock``, if it is on this machine and /proc shows it."""
    try:
        host, port = sock.getpeername()[:2]
        here = sock.getsockname()[:2]
        return _peer_socket((host, port), (here[0], here[1]))  # the client's end: local = its address
    except (OSError, ValueError):
        return None


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process that made the far end of ``sock``; None where it cannot be found."""
    peer = peer_socket(sock)
    return peer.uid if peer is not None else None


def _command(pid: str) -> str:
    try:
        raw = (PROC / pid / "cmdline").read_bytes()
    except OSError:
        return "?"
    args = [a.decode(errors="replace") for a in raw.split(b"\0") if a]
    if len(args) >= 3 and args[1] == "-m":  # python -m esptool …: the module is the program
        return args[2]
    if len(args) >= 2 and os.path.basename(args[0]).startswith("python"):
        return "python" if args[1].startswith("-") else os.path.basename(args[1])
    return os.path.basename(args[0]) if args else "?"


def describe_peer(sock: socket.socket, peer: PeerSocket | None = None) -> str | None:
    """``program "esptool" (pid 4242)`` for the process holding the far end of ``sock``, if it is on
    this machine and /proc shows it; None otherwise. The name is quoted safely (core.outside_text)."""
    peer = peer or peer_socket(sock)
    if peer is None or peer.inode == "0":
        return None
    target = f"socket:[{peer.inode}]"  # the client's own socket (this process's, for an in-process client)
    with contextlib.suppress(OSError):
        for entry in os.scandir(PROC):
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                for fd in os.scandir(f"{entry.path}/fd"):
                    with contextlib.suppress(OSError):
                        if os.readlink(fd.path) == target:
                            return f"program {quoted(_command(entry.name))} (pid {entry.name})"
    return None
