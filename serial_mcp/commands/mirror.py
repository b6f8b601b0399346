"""``serial-mcp mirror PORT [--rw]``: show a port live on a PTY (and with ``--rw`` let a person type).

The engine's own mirror (``open(mirror=…)``): the PTY path is the command's one line of stdout.
"""

from __future__ import annotations

from typing import TextIO

import anyio

from serial_mcp import messages
from serial_mcp.api import PortPolicy
from serial_mcp.commands.doors import engine
from serial_mcp.commands.holding import hold
from serial_mcp.commands.output import announce, status


def run_mirror(policy: PortPolicy, port: str, baud: int, rw: bool, out: TextIO) -> int:
    """Show ``port`` on a PTY (and with ``--rw`` let a person type to it) until Ctrl-C, under
    ``policy`` (read-only refuses ``--rw``)."""
    return anyio.run(_mirror, policy, port, baud, rw, out)


async def _mirror(policy: PortPolicy, port: str, baud: int, rw: bool, out: TextIO) -> int:
    mode = "rw" if rw else "ro"
    async with engine(policy) as eng:
        conn = await eng.open(port, baud_rate=baud, mirror=mode)
        path = conn.opened.mirror or ""

        def ready() -> None:
            announce(out, path)
            status(messages.CLI_MIRRORING.format(port=conn.port, path=path, mode=mode))

        await hold(conn, ready)
    return 0
