"""While an RFC 2217 client writes to a connection's port (``conn.lent_to``), serial-mcp writes
nothing of its own: every operation that would put a byte on the wire, drive a line or change a
setting refuses with ``port_lent`` (naming the client), unless the call says ``force=true``.
Reading stays open; standing responders are held by the connection itself while it is lent."""

from __future__ import annotations

from serial_mcp import messages
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import Conflict, ErrorCode, SerialMcpError
from serial_mcp.serial.manager import ConnectionManager

# the rows of engine/operations.py that write, drive lines or change settings (each has ``force``)
REFUSED_WHILE_LENT = frozenset(
    {
        "write", "transact", "flush", "capture_boot", "set_dtr_rts", "send_break",
        "set_flow_control", "reconfigure", "detect_baud", "file_transfer",
    }
)  # fmt: skip
# rows that reopen or hand away the OS handle the client is using: refused while lent, force or not
UNFORCEABLE_WHILE_LENT = frozenset({"lend", "reconnect"})
_SETTING_KEYS = frozenset(SerialSettings().as_dict())


def refuse_if_lent(manager: ConnectionManager, name: str, target: str | None, opts: object) -> None:
    """Raise ``port_lent`` if operation ``name`` would write to a lent connection without ``force``."""
    hint = messages.PORT_LENT_FORCE
    if name in UNFORCEABLE_WHILE_LENT:  # closing the handle under a flashing client: never
        if name == "lend" and getattr(opts, "action", "status") == "status":
            return
        hint = messages.PORT_LENT_NO_FORCE
    elif name == "configure":  # its connection is an option; only a settings change writes
        target = getattr(opts, "connection_id", None)
        defaults = getattr(opts, "defaults", None)
        if not isinstance(defaults, dict) or not _SETTING_KEYS & set(defaults):
            return
    elif name not in REFUSED_WHILE_LENT or getattr(opts, "force", False):
        return
    if not isinstance(target, str):
        return
    try:
        conn = manager.get(target)
    except SerialMcpError:  # the operation itself says what is wrong with the id
        return
    client = conn.lent_to
    if client is None:
        return
    if name == "configure":
        hint = messages.PORT_LENT_CONFIGURE
    raise Conflict(
        ErrorCode.PORT_LENT,
        messages.PORT_LENT.format(id=conn.id, client=client, url=conn.rfc2217.url, hint=hint),
        client=client,
        connection_id=conn.id,
    )
