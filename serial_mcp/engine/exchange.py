"""The read and the write-then-read exchange: ``read`` and ``transact`` (one write, its reply read
from an RX mark taken before the write). Below the operation modules: the operation table calls
them, and ``dialog_ops`` (``transact(steps)``, ``keys``) is made of runs of them.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import anyio

from serial_mcp import messages
from serial_mcp.core.framing.config import reply_framing
from serial_mcp.core.pace import Pace
from serial_mcp.engine import event_reports, responding, results, shaping
from serial_mcp.engine.access import Caller
from serial_mcp.engine.options import (
    ReadOptions,
    TransactOptions,
)
from serial_mcp.engine.services import Services
from serial_mcp.errors import InvalidArgument
from serial_mcp.serial import reader
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.event_start import pin_event_start

SHAPE_ASIDE_FRAMES = 1000  # a read with more frames is shaped on a worker thread
MAX_SUMMARY_FIELDS = 8


async def read(svc: Services, caller: Caller, connection_id: str, opts: ReadOptions) -> results.ReadResult:
    """Read what arrived (from the caller's cursor unless ``opts.from_`` says otherwise)."""
    responding.check(svc, "read", opts.respond)
    conn = svc.connection(caller, connection_id, "write" if opts.respond is not None else "read")
    req = shaping.read_request(
        conn, caller, opts, from_=opts.from_, encoding=opts.encoding, **_summary_of(opts)
    )
    term = shaping.screen_for(conn, req.cursor, opts.screen) if opts.screen is not None else None
    start = None
    if opts.respond is not None:  # a rule sees the unread bytes from the read's start
        req = await pin_event_start(conn, req)
        start = reader.resolve_start(conn, req)
    async with responding.armed(svc, "read", conn, opts.respond, start) as responder:
        outcome = await reader.read(conn, req)
    shape = functools.partial(
        shaping.read_result, conn, outcome, req.encoding, responder, strip_ansi=opts.strip_ansi,
        view=opts.frames, verbose=opts.verbose,
    )  # fmt: skip
    # Thousands of frames take a tenth of a second and more to shape: beside the loop, not on it.
    many = outcome.frames is not None and len(outcome.frames) > SHAPE_ASIDE_FRAMES
    result = await anyio.to_thread.run_sync(shape) if many else shape()
    if outcome.cursor is not None:
        result.cursor = caller.shown_cursor(outcome.cursor)
    result.hint = shaping.silence_hint(conn, outcome, None)
    if term is not None:
        term.feed(outcome.data)
        result.screen = term.rows()
    since = outcome.from_offset if req.summary is not None else 0  # issue 37: a summary's own window
    result.events = await event_reports.new_events(conn, req.cursor, outcome.next_offset, since)
    return result


def _summary_of(opts: ReadOptions) -> dict[str, Any]:
    """``summary``/``to``/``fields`` as the read request takes them, checked: ``to`` and
    ``fields`` only with ``summary``, and a summary neither matches nor returns a screen."""
    if not opts.summary:
        for name in ("to", "fields"):
            if getattr(opts, name) is not None:
                raise InvalidArgument(messages.READ_SUMMARY_ONLY.format(name=name))
        return {}
    for name in ("match", "screen", "reply", "respond"):
        if getattr(opts, name) is not None:
            raise InvalidArgument(messages.READ_SUMMARY_WITH.format(name=name))
    fields = opts.fields or []
    if len(fields) > MAX_SUMMARY_FIELDS or not all(isinstance(f, str) and 0 < len(f) <= 64 for f in fields):
        raise InvalidArgument(messages.READ_SUMMARY_FIELDS.format(max=MAX_SUMMARY_FIELDS))
    return {"summary": tuple(fields), "to": opts.to}


async def transact(
    svc: Services, caller: Caller, connection_id: str, opts: TransactOptions
) -> results.TransactResult:
    """Write ``opts.data``, then read the reply from an RX mark taken before the write (a fast reply
    is never missed); on RS-485 our own echo is skipped unless ``read_echo``. (``dialog_ops`` runs
    ``steps`` and ``keys`` on top of this.)"""
    svc.policy.require_writable("transact")
    conn = svc.connection(caller, connection_id, "write")
    responding.check(svc, "transact", opts.respond)
    # Everything is validated before a single byte is sent.
    resolved = shaping.codecs(conn, opts.protocol, opts.rx_framing, opts.tx_framing, opts.rx_parser)
    encoding = opts.read_encoding or opts.encoding
    req = shaping.read_request(conn, caller, opts, encoding=encoding, resolved=resolved)
    body = shaping.payload(opts.data, opts.encoding, resolved.tx_framing)
    if req.decode is not None:  # issue 37: the framing knows the request (Modbus RTU: its reply's shape)
        framing = reply_framing(req.decode.rx_framing, body)
        req = req._replace(decode=dataclasses.replace(req.decode, rx_framing=framing))
    req = req._replace(sent=body)  # with no stop named, the read waits for the reply to it (issue 37.5)
    paced = shaping.pace_for(conn, opts.pace)
    budget = shaping.write_budget(conn, body, paced, opts.write_timeout_ms)
    shaping.require_open(conn)
    async with shaping.tx_turn(conn, body, budget):
        mark = conn.rx_end()  # the RX live edge, taken BEFORE the write
        if opts.respond is None:
            responder = None
            n, outcome = await _exchange(conn, body, paced, budget, mark, req, opts.read_echo)
        else:
            async with responding.armed(svc, "transact", conn, opts.respond, mark) as responder:
                n, outcome = await _exchange(conn, body, paced, budget, mark, req, opts.read_echo)
    read_part = shaping.read_result(
        conn,
        outcome,
        req.encoding,
        responder,
        strip_ansi=opts.strip_ansi,
        view=opts.frames,
        verbose=opts.verbose,
    )
    if read_part.cursor is not None:
        read_part.cursor = caller.shown_cursor(read_part.cursor)
    read_part.hint = shaping.silence_hint(conn, outcome, body)
    result = results.TransactResult(
        write=results.WriteResult(connection_id=conn.id, bytes_written=n, tx_bytes=conn.tx.tx_bytes),
        read=read_part,
        mark_offset=mark,
        events=await event_reports.new_events(conn, req.cursor, outcome.next_offset),
    )
    result.set_verbose(opts.verbose)
    return result


async def _exchange(
    conn: Connection,
    body: bytes,
    paced: Pace | None,
    budget: float,
    mark: int,
    req: reader.ReadRequest,
    read_echo: bool,
) -> tuple[int, reader.ReadOutcome]:
    """Write, then read the reply from ``mark`` (our own RS-485 echo skipped unless ``read_echo``)."""
    n = await shaping.write_all(conn, body, paced, budget)
    start = mark
    if conn.settings.rs485 is not None and not read_echo:
        start = await skip_echo(conn, mark, body, req.timeout_ms)
    return n, await reader.read(conn, req, start=start)


async def skip_echo(conn: Connection, mark: int, sent: bytes, timeout_ms: int) -> int:
    """On a half-duplex (RS-485) bus the transceiver hears our own bytes first: if exactly what we
    sent comes back, the reply starts after it; anything else is left in the reply."""
    req = reader.build_read_request(
        from_="now", timeout_ms=timeout_ms, max_bytes=len(sent), idle_ms=timeout_ms or 1, encoding="hex"
    )
    echo = await reader.read(conn, req, start=mark)
    return mark + len(sent) if echo.data == sent else mark
