"""The read and the write-then-read exchange: ``read`` and ``transact`` (one write, its reply read
from an RX mark taken before the write). Below the operation modules: the operation table calls
them, and ``dialog_ops`` (``transact(steps)``, ``keys``) is made of runs of them.

A transact's options are read once, into an ``Exchange`` (the bytes, their pacing and deadline,
the read of the reply), before a byte is sent; the write path is ``writing``'s, the read request
``read_plan``'s and the result ``read_shape``'s.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import anyio

from serial_mcp.core.framing.config import reply_framing
from serial_mcp.core.pace import Pace
from serial_mcp.engine import read_plan, read_shape, responding, results, writing
from serial_mcp.engine.access import Caller
from serial_mcp.engine.options import ReadOptions, TransactOptions
from serial_mcp.engine.services import Services
from serial_mcp.serial import reader
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.event_start import pin_event_start

SHAPE_ASIDE_FRAMES = 1000  # a read with more frames is shaped on a worker thread


async def read(svc: Services, caller: Caller, connection_id: str, opts: ReadOptions) -> results.ReadResult:
    """Read what arrived (from the caller's cursor unless ``opts.from_`` says otherwise)."""
    if opts.respond is not None:
        responding.check(svc, "read", opts.respond)
    conn = svc.connection(caller, connection_id, "write" if opts.respond is not None else "read")
    req = read_plan.read_request(conn, caller, opts, encoding=opts.encoding)
    term = read_plan.screen_for(conn, req.cursor, opts.screen) if opts.screen is not None else None
    start = None
    if opts.respond is not None:  # a rule sees the unread bytes from the read's start
        req = await pin_event_start(conn, req)
        start = reader.resolve_start(conn, req)
    async with responding.armed(svc, "read", conn, opts.respond, start) as responder:
        outcome = await reader.read(conn, req)
    if term is not None:
        term.feed(outcome.data)
    since = outcome.from_offset if req.summary is not None else 0  # issue 37: a summary's own window
    told = {
        "cursor": None if outcome.cursor is None else caller.shown_cursor(outcome.cursor),
        "hint": read_shape.silence_hint(conn, outcome, None),
        "screen": None if term is None else term.rows(),
        "events": await read_shape.new_events(conn, req.cursor, outcome.next_offset, since),
    }

    def shape() -> results.ReadResult:
        return read_shape.read_result(
            conn, outcome, req.encoding, responder, opts.strip_ansi, opts.frames, **told
        )

    # Thousands of frames take a tenth of a second and more to shape: beside the loop, not on it.
    many = outcome.frames is not None and len(outcome.frames) > SHAPE_ASIDE_FRAMES
    return await anyio.to_thread.run_sync(shape) if many else shape()


class Exchange(NamedTuple):
    """A transact's options, read once: what goes out, how, within what time, and the read of
    its reply (which waits for the reply to ``body`` when no stop is named, issue 37.5)."""

    body: bytes
    pace: Pace | None
    budget: float  # seconds for the TX turn and the write
    req: reader.ReadRequest
    read_echo: bool


def plan(conn: Connection, caller: Caller, opts: TransactOptions) -> Exchange:
    """Everything a transact needs, validated before a single byte is sent."""
    resolved = read_plan.codecs(conn, opts.protocol, opts.rx_framing, opts.tx_framing, opts.rx_parser)
    req = read_plan.read_request(
        conn, caller, opts, encoding=opts.read_encoding or opts.encoding, resolved=resolved
    )
    body = writing.payload(opts.data, opts.encoding, resolved.tx_framing)
    if req.decode is not None:  # issue 37: the framing knows the request (Modbus RTU: its reply's shape)
        framing = reply_framing(req.decode.rx_framing, body)
        req = req._replace(decode=dataclasses.replace(req.decode, rx_framing=framing))
    paced = writing.pace_for(conn, opts.pace)
    budget = writing.write_budget(conn, body, paced, opts.write_timeout_ms)
    return Exchange(body, paced, budget, req._replace(sent=body), opts.read_echo)


async def transact(
    svc: Services, caller: Caller, connection_id: str, opts: TransactOptions
) -> results.TransactResult:
    """Write ``opts.data``, then read the reply from an RX mark taken before the write (a fast reply
    is never missed); on RS-485 our own echo is skipped unless ``read_echo``. (``dialog_ops`` runs
    ``steps`` and ``keys`` on top of this.)"""
    svc.policy.require_writable("transact")
    conn = svc.connection(caller, connection_id, "write")
    if opts.respond is not None:
        responding.check(svc, "transact", opts.respond)
    x = plan(conn, caller, opts)
    writing.require_open(conn)
    async with writing.tx_turn(conn, x.body, x.budget):
        mark = conn.rx_end()  # the RX live edge, taken BEFORE the write
        if opts.respond is None:
            responder = None
            n, outcome = await _exchange(conn, x, mark)
        else:
            async with responding.armed(svc, "transact", conn, opts.respond, mark) as responder:
                n, outcome = await _exchange(conn, x, mark)
    read_part = read_shape.read_result(
        conn,
        outcome,
        x.req.encoding,
        responder,
        opts.strip_ansi,
        opts.frames,
        cursor=None if outcome.cursor is None else caller.shown_cursor(outcome.cursor),
        hint=read_shape.silence_hint(conn, outcome, x.body),
    )
    return results.TransactResult(
        write=results.WriteResult(connection_id=conn.id, bytes_written=n, tx_bytes=conn.tx.tx_bytes),
        read=read_part,
        mark_offset=mark,
        events=await read_shape.new_events(conn, x.req.cursor, outcome.next_offset),
    )


async def _exchange(conn: Connection, x: Exchange, mark: int) -> tuple[int, reader.ReadOutcome]:
    """Write, then read the reply from ``mark`` (our own RS-485 echo skipped unless ``read_echo``)."""
    n = await writing.write_all(conn, x.body, x.pace, x.budget)
    start = mark
    if conn.settings.rs485 is not None and not x.read_echo:
        start = await skip_echo(conn, mark, x.body, x.req.timeout_ms)
    return n, await reader.read(conn, x.req, start=start)


async def skip_echo(conn: Connection, mark: int, sent: bytes, timeout_ms: int) -> int:
    """On a half-duplex (RS-485) bus the transceiver hears our own bytes first: if exactly what we
    sent comes back, the reply starts after it; anything else is left in the reply."""
    req = reader.build_read_request(
        from_="now", timeout_ms=timeout_ms, max_bytes=len(sent), idle_ms=timeout_ms or 1, encoding="hex"
    )
    echo = await reader.read(conn, req, start=mark)
    return mark + len(sent) if echo.data == sent else mark
