"""STUB (lead's worktree only, replaced by wt-onecall's held.py at merge)."""
from __future__ import annotations

from collections.abc import Mapping

from serial_mcp.engine.access import Caller
from serial_mcp.engine.opening import Opener
from serial_mcp.engine.services import Services
from serial_mcp.serial.connection import Connection


async def port_connection(
    svc: Services, caller: Caller, port: str, settings: Mapping[str, object], *, protocol: str | None = None
) -> tuple[Connection, bool]:
    for c in svc.manager.list():
        if c.port == port and c.owner == caller.key:
            return c, False
    from serial_mcp.engine.options import PROFILE_FIELDS

    fields: dict[str, object] = dict.fromkeys(PROFILE_FIELDS)
    fields.update(settings)
    if protocol is not None:
        fields['protocol'] = protocol
    opened = await Opener(svc).open(port, fields, caller=caller)
    return opened.conn, True


def held_note(svc: Services, conn: Connection) -> str | None:
    return None


def touch(svc: Services, conn: Connection) -> None:
    return None
