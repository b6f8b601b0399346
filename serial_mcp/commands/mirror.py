"""``serial-mcp mirror PORT [--rw | --rfc2217]``: show a port live on a PTY (and with ``--rw`` let a
person type), or serve it as an RFC 2217 server on loopback (``--rfc2217``: esptool, mpremote).

The engine's own mirror (``open(mirror=…)``): the PTY path, or the ``rfc2217://`` URL, is the
command's one line of stdout. Under ``--read-only`` ``--rw`` is refused and ``--rfc2217`` is
receive-only (the client's writes are dropped, its line and baud changes not applied).
"""

from __future__ import annotations

from typing import TextIO

import anyio

from serial_mcp import messages
from serial_mcp.api import PortPolicy
from serial_mcp.commands.doors import engine
from serial_mcp.commands.holding import hold
from serial_mcp.commands.output import announce, status


def run_mirror(
    policy: PortPolicy, port: str, baud: int, rw: bool, out: TextIO, rfc2217: str | None = None
) -> int:
    """Show ``port`` on a PTY (and with ``--rw`` let a person type to it), or with ``rfc2217``
    (``"rfc2217"`` or ``"rfc2217+esp-reset"``) serve it on ``rfc2217://127.0.0.1:PORT``, until
    Ctrl-C, under ``policy`` (read-only refuses ``--rw`` and makes the RFC 2217 server receive-only)."""
    if rw and rfc2217:
        status(messages.CLI_MIRROR_ONE_KIND)
        return 2
    return anyio.run(_mirror, policy, port, baud, rfc2217 or ("rw" if rw else "ro"), out)


async def _mirror(policy: PortPolicy, port: str, baud: int, mode: str, out: TextIO) -> int:
    async with engine(policy) as eng:
        conn = await eng.open(port, baud_rate=baud, mirror=mode)
        if mode.startswith("rfc2217"):
            where = conn.opened.mirror_url or ""
            ro = messages.CLI_MIRROR_RECEIVE_ONLY if policy.read_only else ""
            line = messages.CLI_MIRRORING_RFC2217.format(port=conn.port, url=where, ro=ro)
        else:
            where = conn.opened.mirror or ""
            line = messages.CLI_MIRRORING.format(port=conn.port, path=where, mode=mode)
        if conn.opened.hint:  # which mirror esptool needs, on an ESP32 or a likely one
            line += messages.S_OPEN_HINT.format(hint=conn.opened.hint)

        def ready() -> None:
            announce(out, where)
            status(line)

        await hold(conn, ready)
    return 0
