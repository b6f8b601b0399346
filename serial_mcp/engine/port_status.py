"""How a connection is shown: its line in ``list_connections`` and its ``get_status``."""

from __future__ import annotations

from datetime import UTC, datetime

from serial_mcp import messages
from serial_mcp.engine import results as models
from serial_mcp.engine.access import Caller
from serial_mcp.serial.connection import Connection


def summary(c: Connection) -> models.ConnectionSummary:
    return models.ConnectionSummary(
        connection_id=c.id,
        port=c.port,
        state=c.state,
        baud_rate=c.settings.baud_rate,
        rx_bytes=c.rx_end(),
        tx_bytes=c.tx.tx_bytes,
    )


def status(conn: Connection, caller: Caller | None = None) -> models.StatusResult:
    """The connection as ``caller`` sees it: its own default cursor as ``default``, other sessions'
    defaults left out."""
    caller = caller or Caller.local()
    start, end, evicted, positions = conn.rx.status()
    cursors = {
        shown: models.CursorStatus(
            offset=offset, unread=max(0, end - max(offset, start)), lost=max(0, start - offset)
        )
        for name, offset in positions
        if (shown := caller.shown_cursor(name)) is not None
    }
    lines: dict[str, bool | None] = {"cts": None, "dsr": None, "ri": None, "cd": None}
    if conn.state == "open":
        try:
            lines = conn.lines.modem_lines()
        except OSError:
            pass
    opts = conn.options.as_dict()
    mirror, mine = conn.rfc2217, conn.owner == caller.key
    live = mirror.live_settings() if mirror is not None else None  # a mirror client set the port
    set_by = (
        messages.SETTINGS_BY_CLIENT.format(client=mirror.client)
        if mirror is not None and live is not None
        else messages.SETTINGS_BY_BORROWER
        if conn.lend is not None
        else None
    )
    return models.StatusResult(
        connection_id=conn.id,
        port=conn.port,
        state=conn.state,
        settings=(live or conn.settings).as_dict(),
        settings_by=set_by,
        own_settings=conn.settings.as_dict() if set_by is not None else None,
        rx_bytes=end,
        tx_bytes=conn.tx.tx_bytes,
        start_offset=start,
        end_offset=end,
        rx_buffer_size=conn.rx_buffer_size,
        cursors=cursors,
        bytes_lost_total=conn.bytes_lost_total,
        bytes_evicted=evicted,
        cts=lines.get("cts"),
        dsr=lines.get("dsr"),
        ri=lines.get("ri"),
        cd=lines.get("cd"),
        dtr=conn.lines.dtr,
        rts=conn.lines.rts,
        reconnect_attempts=conn.reconnect_attempts,
        reconnects=conn.reconnects,
        reconnect=conn.reconnect_policy.as_dict() if conn.reconnect_policy else None,
        low_latency=conn.lines.low_latency(),
        defaults=opts,
        last_error=conn.last_error,
        opened_at=datetime.fromtimestamp(conn.opened_at, UTC).isoformat(),
        rfc2217=mirror.describe(owner=mine) if mirror is not None else None,  # its URL: the owner's alone
    )
