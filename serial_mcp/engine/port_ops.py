"""Discovery and lifecycle operations: list ports and connections, open, close, status, reconnect."""

from __future__ import annotations

import dataclasses
from typing import Any

import anyio

from serial_mcp.core.identity import plan_bare_open
from serial_mcp.engine import event_reports, held, lab_ports, port_status, responding, results
from serial_mcp.engine.access import NOBODY, Caller
from serial_mcp.engine.opening import Opener
from serial_mcp.engine.options import NoOptions, OpenOptions
from serial_mcp.engine.services import Services
from serial_mcp.serial.connection import Connection, Listener
from serial_mcp.serial.following import Follower


async def list_ports(svc: Services, caller: Caller, target: None, opts: NoOptions) -> results.ListPortsResult:
    """``list_ports``: every port the system shows, with its USB identity and what a bare open
    would do."""
    return await ports(svc)


async def ports(svc: Services) -> results.ListPortsResult:
    """The ports as ``list_ports`` shows them (the ``serial://ports`` resource too)."""
    open_by_port = {c.port: c.id for c in svc.manager.list()}
    infos = await anyio.to_thread.run_sync(svc.port_lister)
    ports = [  # PortInfo's fields but hwid (a result model ignores what it does not declare)
        results.Port(**dataclasses.asdict(p), open_as=open_by_port.get(p.name)) for p in infos
    ]
    listed = {p.name for p in infos}
    ports += [  # open sim://, replay://, socket:// … connections are ports too, shown as such
        results.Port(
            name=c.port, transport="virtual", open_as=c.id, description=c.port.split("://")[0] + " (open)"
        )
        for c in svc.manager.list()
        if c.port not in listed
    ]
    lab, lab_error = await lab_ports.listed(svc, open_by_port)  # labgrid places (issue 25)
    ports = [p for p in ports if p.name not in {q.name for q in lab}] + lab
    matches: list[dict[str, Any]] = []
    if svc.profiles is not None:
        stored = await anyio.to_thread.run_sync(svc.profiles.list)
        matches = [plan_bare_open(p, infos, stored).as_dict() for p in infos]
    return results.ListPortsResult(ports=ports, profile_matches=matches, lab_error=lab_error)


async def list_connections_op(
    svc: Services, caller: Caller, target: None, opts: NoOptions
) -> results.ListConnectionsResult:
    """``list_connections``: every open connection, whoever opened it."""
    return list_connections(svc)


def list_connections(svc: Services) -> results.ListConnectionsResult:
    listed = [port_status.summary(c) for c in svc.manager.list()]
    for c, summary in zip(svc.manager.list(), listed, strict=True):
        summary.held = held.held_note(svc, c)
    return results.ListConnectionsResult(connections=listed)


async def open_port(svc: Services, caller: Caller, target: None, opts: OpenOptions) -> results.OpenResult:
    """``open``: the port with the call's settings over its profile's (None = not given: the
    profile's or the default); ``respond``: standing rules armed from the first received byte;
    ``elf``: the firmware ELF, read and parsed before the port is touched."""
    elf = await event_reports.load(svc, opts.elf) if opts.elf is not None else None
    opened = await Opener(svc).open(
        opts.port,
        opts.fields(),
        profile_mode=opts.profile_mode,
        record=opts.record,
        mirror=opts.mirror,
        caller=caller,
        share=opts.share,
        respond=opts.respond,
    )
    opened.conn.events.use_elf(elf)
    return results.open_result(opened.conn, opened.profile, opened.action, opened.hint)


async def close(svc: Services, caller: Caller, connection_id: str, opts: NoOptions) -> results.CloseResult:
    conn = svc.connection(caller, connection_id, "close")
    await svc.manager.close(conn.id)
    return results.CloseResult(
        connection_id=conn.id, port=conn.port, rx_bytes=conn.rx_end(), tx_bytes=conn.tx.tx_bytes
    )


async def get_status_op(
    svc: Services, caller: Caller, connection_id: str, opts: NoOptions
) -> results.StatusResult:
    """``get_status``: the connection as this caller sees it."""
    return get_status(svc, caller, connection_id)


def get_status(svc: Services, caller: Caller, connection_id: str) -> results.StatusResult:
    conn = svc.connection(caller, connection_id)
    status = port_status.status(conn, caller)
    status.responders = responding.statuses(conn) or None
    mine, orphaned = conn.owner == caller.key, conn.owner == NOBODY
    status.owner = "you" if mine else "nobody" if orphaned else "another session"
    status.share = conn.share
    if conn.lend is not None:
        status.lend = conn.lend.status()
    if isinstance(conn.reopener, Follower):
        status.follows = conn.reopener.device
    replay = conn.lines.replay_progress()
    if replay is not None:  # a replay:// device reports its progress
        status.replay = replay.status()
    status.events = conn.events.status()
    status.exclusive = conn.exclusive
    status.held = held.held_note(svc, conn)
    status.intruders = [dict(i) for i in conn.intruders] or None
    return status


async def reconnect(
    svc: Services, caller: Caller, connection_id: str, opts: NoOptions
) -> results.ReconnectResult:
    conn = svc.writing(caller, connection_id, "reconnect")
    await conn.reconnect_now()
    return results.ReconnectResult(
        connection_id=conn.id,
        state=conn.state,
        reconnect_attempts=conn.reconnect_attempts,
        end_offset=conn.rx_end(),
    )


def watch_events(conn: Connection, listener: Listener) -> None:
    """Call ``listener(event, payload)`` for every event of ``conn`` from now on (it must not block:
    it runs on the pump thread for rx)."""
    conn.add_listener(listener)
