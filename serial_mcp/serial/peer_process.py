"""Who is at the other end of a loopback TCP connection: the program's name and pid, from /proc
(Linux; elsewhere, or when /proc does not say, nothing). So ``port_lent`` can name the client that
holds a lent port ("esptool (pid 4242)") rather than only its address."""

from __future__ import annotations

import contextlib
import os
import socket
from pathlib import Path

PROC = Path("/proc")


def _hex_endpoint(host: str, port: int) -> str:
    packed = socket.inet_aton(host)
    return f"{int.from_bytes(packed, 'little'):08X}:{port:04X}"


def _socket_inode(local: tuple[str, int], remote: tuple[str, int]) -> str | None:
    """The inode of the socket whose local end is ``local`` and remote end ``remote`` (IPv4)."""
    want_local, want_remote = _hex_endpoint(*local), _hex_endpoint(*remote)
    with contextlib.suppress(OSError), open(PROC / "net" / "tcp") as table:
        next(table, None)
        for line in table:
            fields = line.split()
            if len(fields) > 9 and fields[1] == want_local and fields[2] == want_remote:
                return fields[9]
    return None


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


def describe_peer(sock: socket.socket) -> str | None:
    """``"esptool (pid 4242)"`` for the process holding the far end of ``sock``, if it is on this
    machine and /proc shows it; None otherwise."""
    try:
        host, port = sock.getpeername()[:2]
        here = sock.getsockname()[:2]
        inode = _socket_inode((host, port), (here[0], here[1]))  # the client's end: local = its address
    except (OSError, ValueError):
        return None
    if inode is None or inode == "0":
        return None
    target = f"socket:[{inode}]"  # the client's own socket (this process's, for an in-process client)
    with contextlib.suppress(OSError):
        for entry in os.scandir(PROC):
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                for fd in os.scandir(f"{entry.path}/fd"):
                    with contextlib.suppress(OSError):
                        if os.readlink(fd.path) == target:
                            return f"{_command(entry.name)} (pid {entry.name})"
    return None
