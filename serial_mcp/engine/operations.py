"""Every operation of the engine in one table: its name, its options, what it runs, how it is shown.

The front doors are made from this table, not written beside it: ``mcp/tools.py`` registers one
MCP tool per row (its input schema from the row's options, its annotations from ``hints``), and
``api.py`` binds each row as a method of ``EngineConnection`` (the ``on_connection`` rows: their
target is a connection id) or of ``Engine`` (the rest), with the options' fields as typed
keywords. So a new operation, or a new option of one, reaches the tools, the Python API and the
blocking API at once, and the parity tests only have to check that nothing is left out.

An operation runs ``run(svc, caller, target, options)`` (``target`` is the connection id, or None
for an engine-wide operation) and returns one of the typed results of ``results.py``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, ParamSpec, TypeVar

from serial_mcp import messages
from serial_mcp.core.settings import SerialSettings
from serial_mcp.engine import (
    checksum_ops,
    console_ops,
    exchange,
    held,
    identify_ops,
    io_ops,
    lend_ops,
    line_ops,
    log_ops,
    port_ops,
    profile_ops,
)
from serial_mcp.engine import options as o
from serial_mcp.engine.access import Caller
from serial_mcp.engine.services import Services
from serial_mcp.errors import Conflict, ErrorCode, SerialMcpError
from serial_mcp.serial.manager import ConnectionManager

P = ParamSpec("P")
OptionsT = TypeVar("OptionsT")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Hints:
    """What an operation does, as MCP annotations say it: ``read_only`` changes nothing;
    ``destructive`` may change the device or stored state in a way that is not simply additive;
    ``idempotent`` repeating it changes nothing more; ``mutates`` writes to a device, drives its
    lines or changes stored settings (what read-only mode refuses)."""

    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    mutates: bool = False


READING = Hints(read_only=True, idempotent=True)
WRITING = Hints(destructive=True, mutates=True)
SETTING = Hints(destructive=True, idempotent=True, mutates=True)  # the same call again changes nothing more
CHANGING = Hints(mutates=True)


@dataclass(frozen=True, slots=True)
class Operation(Generic[P, OptionsT, R]):
    """One row of the table. ``options`` is the options class (its constructor's parameters are
    the operation's keywords); ``run`` takes the target (connection id or None) and an instance."""

    name: str
    options: Callable[P, OptionsT]
    run: Callable[[Services, Caller, Any, OptionsT], Awaitable[R]]
    title: str
    description: str
    hints: Hints = Hints()
    on_connection: bool = True

    @property
    def options_type(self) -> type[Any]:
        return self.options  # type: ignore[return-value]  # a class, called through its constructor


def _op(
    name: str,
    options: Callable[P, OptionsT],
    run: Callable[[Services, Caller, Any, OptionsT], Awaitable[R]],
    title: str,
    description: str,
    hints: Hints = Hints(),
    *,
    on_connection: bool = True,
) -> Operation[P, OptionsT, R]:
    return Operation(name, options, run, title, description, hints, on_connection)


# --- discovery and lifecycle ----------------------------------------------------------------------
LIST_PORTS = _op(
    "list_ports", o.NoOptions, port_ops.list_ports, "List serial ports", messages.D_LIST_PORTS, READING,
    on_connection=False,
)  # fmt: skip
IDENTIFY = _op(
    "identify", o.IdentifyOptions, identify_ops.identify, "Identify what is on each port",
    messages.D_IDENTIFY, on_connection=False,
)  # fmt: skip
LIST_CONNECTIONS = _op(
    "list_connections", o.NoOptions, port_ops.list_connections_op, "List open connections",
    messages.D_LIST_CONNECTIONS, READING, on_connection=False,
)  # fmt: skip
OPEN = _op("open", o.OpenOptions, port_ops.open_port, "Open a port", messages.D_OPEN, on_connection=False)
CLOSE = _op(
    "close", o.NoOptions, port_ops.close, "Close a connection", messages.D_CLOSE, Hints(destructive=True)
)
GET_STATUS = _op(
    "get_status", o.NoOptions, port_ops.get_status_op, "Connection status", messages.D_GET_STATUS, READING
)
RECONNECT = _op(
    "reconnect", o.NoOptions, port_ops.reconnect, "Reopen a connection's port", messages.D_RECONNECT, CHANGING
)
LEND = _op("lend", o.LendOptions, lend_ops.lend, "Lend the port and take it back", messages.D_LEND, WRITING)

# --- I/O ----------------------------------------------------------------------------------------
READ = _op("read", o.ReadOptions, exchange.read, "Read received data", messages.D_READ)
WRITE = _op("write", o.WriteOptions, io_ops.write, "Write data", messages.D_WRITE, WRITING)
TRANSACT = _op(
    "transact", o.TransactOptions, exchange.transact, "Write then read the reply", messages.D_TRANSACT,
    WRITING,
)  # fmt: skip
FLUSH = _op("flush", o.FlushOptions, io_ops.flush, "Discard buffered data", messages.D_FLUSH, SETTING)
CAPTURE_BOOT = _op(
    "capture_boot", o.CaptureBootOptions, io_ops.capture_boot,
    "Reset the board and capture its boot output", messages.D_CAPTURE_BOOT, CHANGING,
)  # fmt: skip

# --- line control -------------------------------------------------------------------------------
SET_DTR_RTS = _op(
    "set_dtr_rts", o.LinesOptions, line_ops.set_dtr_rts, "Set DTR/RTS", messages.D_SET_DTR_RTS, SETTING
)
SEND_BREAK = _op(
    "send_break", o.BreakOptions, line_ops.send_break, "Send BREAK", messages.D_SEND_BREAK, WRITING,
)  # fmt: skip
SET_FLOW_CONTROL = _op(
    "set_flow_control", o.FlowOptions, line_ops.set_flow_control, "Set flow control", messages.D_SET_FLOW,
    SETTING,
)  # fmt: skip
RECONFIGURE = _op(
    "reconfigure", o.ReconfigureOptions, line_ops.reconfigure, "Change UART settings",
    messages.D_RECONFIGURE, SETTING,
)  # fmt: skip

# --- profiles -----------------------------------------------------------------------------------
LIST_PROFILES = _op(
    "list_profiles", o.NoOptions, profile_ops.list_profiles, "List device profiles",
    messages.D_LIST_PROFILES, READING, on_connection=False,
)  # fmt: skip
OPEN_PROFILE = _op(
    "open_profile", o.ProfileNameOptions, profile_ops.open_profile, "Open the device of a profile",
    messages.D_OPEN_PROFILE, on_connection=False,
)  # fmt: skip
SAVE_PROFILE = _op(
    "save_profile", o.SaveProfileOptions, profile_ops.save_profile, "Save a connection as a profile",
    messages.D_SAVE_PROFILE, CHANGING,
)  # fmt: skip
DELETE_PROFILE = _op(
    "delete_profile", o.DeleteProfileOptions, profile_ops.delete_profile, "Delete a profile",
    messages.D_DELETE_PROFILE, WRITING, on_connection=False,
)  # fmt: skip
CONFIGURE = _op(
    "configure", o.ConfigureOptions, profile_ops.configure, "Change a profile or a connection",
    messages.D_CONFIGURE, CHANGING, on_connection=False,
)  # fmt: skip
ROLLBACK_PROFILE = _op(
    "rollback_profile", o.RollbackOptions, profile_ops.rollback_profile,
    "Restore an earlier profile revision", messages.D_ROLLBACK, CHANGING, on_connection=False,
)  # fmt: skip

# --- logs and captures --------------------------------------------------------------------------
GET_LOG = _op(
    "get_log", o.LogOptions, log_ops.get_log_op, "Connection event log", messages.D_GET_LOG, READING
)
CLEAR_LOG = _op(
    "clear_log", o.NoOptions, log_ops.clear_log, "Clear the event log", messages.D_CLEAR_LOG,
    Hints(destructive=True, idempotent=True),
)  # fmt: skip
EXPORT_LOG = _op(
    "export_log", o.ExportOptions, log_ops.export_log, "Export the log to a capture file",
    messages.D_EXPORT_LOG,
)  # fmt: skip
RECORD = _op(
    "record", o.RecordOptions, log_ops.record, "Record a connection to a capture file", messages.D_RECORD
)
LIST_CAPTURES = _op(
    "list_captures", o.NoOptions, log_ops.list_captures, "List capture files", messages.D_LIST_CAPTURES,
    READING, on_connection=False,
)  # fmt: skip

# --- console and utilities ----------------------------------------------------------------------
DETECT_BAUD = _op(
    "detect_baud", o.DetectBaudOptions, console_ops.detect_baud, "Detect the baud rate",
    messages.D_DETECT_BAUD, CHANGING,
)  # fmt: skip
FILE_TRANSFER = _op(
    "file_transfer", o.TransferOptions, console_ops.file_transfer, "XMODEM/YMODEM file transfer",
    messages.D_FILE_TRANSFER, CHANGING,
)  # fmt: skip
COMPUTE_CHECKSUM = _op(
    "compute_checksum", o.ChecksumOptions, checksum_ops.compute_checksum, "Compute a checksum",
    messages.D_COMPUTE_CHECKSUM, READING, on_connection=False,
)  # fmt: skip

OPERATIONS: tuple[Operation[Any, Any, Any], ...] = (
    LIST_PORTS, IDENTIFY, LIST_CONNECTIONS, OPEN, CLOSE, GET_STATUS, RECONNECT, LEND,
    READ, WRITE, TRANSACT, FLUSH, CAPTURE_BOOT,
    SET_DTR_RTS, SEND_BREAK, SET_FLOW_CONTROL, RECONFIGURE,
    LIST_PROFILES, OPEN_PROFILE, SAVE_PROFILE, DELETE_PROFILE, CONFIGURE, ROLLBACK_PROFILE,
    GET_LOG, CLEAR_LOG, EXPORT_LOG, RECORD, LIST_CAPTURES,
    DETECT_BAUD, FILE_TRANSFER, COMPUTE_CHECKSUM,
)  # fmt: skip
BY_NAME: dict[str, Operation[Any, Any, Any]] = {op.name: op for op in OPERATIONS}


async def invoke(
    op: Operation[Any, OptionsT, R], svc: Services, caller: Caller, target: str | None, opts: OptionsT
) -> R:
    """Run ``op`` for ``caller`` on ``target``: every front door calls its operations this way, so
    an error leaving one says which operation, and which connection, it came from."""
    opened = False
    try:
        if isinstance(opts, o.OnPort) and (target is None or opts.named_port()):
            # issue 39: a port instead of connection_id: the caller's connection to it, or a held one
            target, opened = await held.target(svc, caller, op.name, op.hints.mutates, target, opts)
        elif op is OPEN and svc.held:  # open on a port the caller holds: that connection, now kept
            adopted = await held.adopt(svc, caller, opts)  # type: ignore[arg-type]  # OPEN's options
            if adopted is not None:
                return adopted  # type: ignore[return-value]  # OPEN's result
        refuse_if_lent(svc.manager, op.name, target, opts)  # issue 23.1: port_lent
        hold = held.find(svc, target) if svc.held else None
        if hold is None:
            return await op.run(svc, caller, target, opts)
        with held.using(hold):  # a held connection's idle clock waits for the call, then restarts
            return held.marked(svc, hold, await op.run(svc, caller, target, opts))
    except SerialMcpError as exc:
        if opened and isinstance(target, str):  # nothing stays held that no result named
            await held.drop(svc, target)
        exc.attach(op.name, target)
        raise


# --- a lent port (issue 23.1) ---------------------------------------------------------------------
# While an RFC 2217 client writes to a connection's port (``conn.lent_to``), serial-mcp writes
# nothing of its own: every operation that would put a byte on the wire, drive a line or change a
# setting refuses with ``port_lent`` (naming the client), unless the call says ``force=true``.
# Reading stays open; standing responders are held by the connection itself while it is lent.

# the rows that write, drive lines or change settings (each has ``force``)
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
