"""The read, the write-then-read exchange and dialogs of them: ``read``, ``transact`` (one write, its
reply read from an RX mark taken before the write) and ``transact(steps=[...])``. Below the
operation table, which calls them.

A transact's options are read once, into an ``Exchange`` (the bytes, their pacing and deadline,
the read of the reply), before a byte is sent; the write path is ``writing``'s, the read request
``read_plan``'s and the result ``read_shape``'s.

A dialog runs send/expect steps server-side, in order: logging into a console (login → password →
prompt → command → prompt) or an AT init sequence is one call instead of eight to sixteen, at the
device's pace, not the agent's. Each step is a transact of its own (mark before the write, read
until ``expect``), or a ``read`` when it sends nothing; the dialog stops at the first step whose
``expect`` did not arrive.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import anyio

from serial_mcp import messages
from serial_mcp.core.encoding import decode_input, encode_output
from serial_mcp.core.framing.config import reply_framing
from serial_mcp.core.keys import encode_keys
from serial_mcp.core.pace import Pace
from serial_mcp.engine import micropython_run, read_plan, read_shape, responding, results, writing
from serial_mcp.engine.access import Caller
from serial_mcp.engine.option_types import StepSpec
from serial_mcp.engine.options import READ_WINDOW, ReadOptions, TransactOptions, build, derive
from serial_mcp.engine.services import Services
from serial_mcp.errors import ErrorCode, InvalidArgument, OperationTimeout
from serial_mcp.serial import reader
from serial_mcp.serial.connection import Connection

SHAPE_ASIDE_FRAMES = 1000  # a read with more frames is shaped on a worker thread
MPY_TIMEOUT_MS = 10_000


async def transact(
    svc: Services, caller: Caller, connection_id: str, opts: TransactOptions
) -> results.TransactResult:
    """``transact``: one write-then-read (``keys`` appended to ``data``), or with ``steps`` a whole
    dialog (``data`` and ``keys`` then empty)."""
    if opts.steps is None:
        if opts.keys:
            data, encoding = _step_bytes(opts.data, opts.keys, opts.encoding)
            opts = derive(opts, "keys", data=data, encoding=encoding, keys=None)
        return await transact_one(svc, caller, connection_id, opts)
    if opts.data or opts.keys:
        raise InvalidArgument(messages.STEPS_WITH_DATA)
    svc.writing(caller, connection_id, "transact", "write")
    return await run_steps(svc, caller, connection_id, opts)


async def read(svc: Services, caller: Caller, connection_id: str, opts: ReadOptions) -> results.ReadResult:
    """Read what arrived (from the caller's cursor unless ``opts.from_`` says otherwise)."""
    if opts.respond is not None:
        responding.check(svc, "read", opts.respond)
    conn = svc.connection(caller, connection_id, "write" if opts.respond is not None else "read")
    req = read_plan.read_request(conn, caller, opts, encoding=opts.encoding)
    term = read_plan.screen_for(conn, req.cursor, opts.screen) if opts.screen is not None else None
    start = None
    if opts.respond is not None:  # a rule sees the unread bytes from the read's start
        req = await reader.pin_event_start(conn, req)
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


async def transact_one(
    svc: Services, caller: Caller, connection_id: str, opts: TransactOptions
) -> results.TransactResult:
    """Write ``opts.data``, then read the reply from an RX mark taken before the write (a fast reply
    is never missed); on RS-485 our own echo is skipped unless ``read_echo``."""
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


# --- dialogs: transact(steps=[...]) ------------------------------------------------------------------
def parse_steps(steps: list[StepSpec]) -> list[StepSpec]:
    """What the step's types cannot say (``StepSpec`` checked the rest as the options were built),
    before anything is sent: a bad step 5 must not leave steps 1-4 done."""
    for i, step in enumerate(steps):
        code = step.get("micropython")
        if code is not None:
            if not code.strip() or step.get("send") or step.get("keys") or step.get("expect") is not None:
                raise InvalidArgument(messages.STEP_BAD.format(i=i, problem=messages.MPY_STEP_ALONE))
            if step.get("timeout_ms") == 0:
                raise InvalidArgument(messages.STEP_BAD.format(i=i, problem=messages.MPY_STEP_TIMEOUT))
        elif not step.get("send") and not step.get("keys") and step.get("expect") is None:
            raise InvalidArgument(messages.STEP_BAD.format(i=i, problem="give send, keys or expect"))
    return steps


def _step_bytes(send: str | None, keys: list[str] | None, encoding: str | None) -> tuple[str, str | None]:
    """A step's payload as (data, encoding) for ``transact``: text as given, keys appended."""
    if not keys:
        return send or "", encoding
    raw = (decode_input(send, encoding or "utf8") if send else b"") + encode_keys(keys)
    return raw.hex(), "hex"


async def run_steps(
    svc: Services, caller: Caller, connection_id: str, common: TransactOptions
) -> results.TransactResult:
    """Run ``common.steps``; the transact's own read options (cursor, protocol, encoding,
    strip_ansi, frames …) apply to every step unless the step overrides timeout/idle."""
    parsed = parse_steps(common.steps or [])
    for step in parsed:  # validate payloads and keys before the first byte goes out
        if step.get("micropython") is None:
            _step_bytes(step.get("send"), step.get("keys"), step.get("encoding"))
    done: list[results.StepResult] = []
    total_written = 0
    last: results.TransactResult | None = None
    mark: int | None = None
    found: list[dict[str, Any]] = []  # detected events new to the caller, listed once on the dialog
    for i, step in enumerate(parsed):
        overrides: dict[str, Any] = {"match": step.get("expect"), "respond": step.get("respond")}
        overrides.update((k, step[k]) for k in ("reply", "timeout_ms", "idle_ms") if step.get(k) is not None)
        if step.get("micropython") is not None:
            result = await _micropython_step(svc, caller, connection_id, i, step)
            total_written += result.bytes_written
            done.append(result)
            if not result.ok:
                break
            continue
        data, encoding = _step_bytes(
            step.get("send"), step.get("keys"), step.get("encoding") or common.encoding
        )
        if data:
            one = derive(
                common, f"steps[{i}]", steps=None, keys=None, data=data, encoding=encoding, **overrides
            )
            last = await transact_one(svc, caller, connection_id, one)
            written, got = last.write.bytes_written, last.read
            mark = last.mark_offset if mark is None else mark
            found += last.events or []
        else:
            got = await read(svc, caller, connection_id, _read_options(common, overrides, i))
            written = 0
            found += got.events or []
            got.events = None
        total_written += written
        ok = (
            got.matched
            if step.get("expect") is not None
            else got.stop_reason not in ("closed", "disconnected")
        )
        done.append(results.StepResult(step=i, ok=ok, bytes_written=written, read=got))
        if not ok:
            break
    final = done[-1].read
    # the write's tx_bytes is the port's count now: a micropython step writes outside transact
    tx_bytes = svc.connection(caller, connection_id, "write").tx.tx_bytes
    return results.TransactResult(
        write=results.WriteResult(
            connection_id=connection_id if last is None else last.write.connection_id,
            bytes_written=total_written,
            tx_bytes=tx_bytes,
        ),
        read=final,  # the last step's (issue 26: a lean result does not repeat it)
        mark_offset=mark if mark is not None else final.from_offset,
        steps=done,
        steps_ok=all(s.ok for s in done) and len(done) == len(parsed),
        steps_given=len(parsed),
        events=found or None,
    )


def _read_options(common: TransactOptions, overrides: dict[str, Any], index: int) -> ReadOptions:
    """A step that sends nothing is a read with the transact's read window (every one of its
    options, ``frames`` and ``strip_ansi`` included) and the step's own overrides."""
    window = {name: getattr(common, name) for name in READ_WINDOW}
    window.update(overrides, encoding=common.read_encoding or common.encoding)
    return build(ReadOptions, f"steps[{index}]", **window)


async def _micropython_step(
    svc: Services, caller: Caller, connection_id: str, index: int, step: StepSpec
) -> results.StepResult:
    """Run a script through the raw REPL (``micropython_run``); ok when it raised nothing."""
    conn = svc.connection(caller, connection_id, "write")
    writing.require_open(conn)
    timeout_ms = step.get("timeout_ms") or MPY_TIMEOUT_MS  # typed and > 0 (parse_steps)
    interrupt = step.get("interrupt") is not False

    async def send(data: bytes) -> int:
        out = await writing.write_locked(conn, data, None, writing.write_budget(conn, data, None, None))
        if out.timed_out:
            raise OperationTimeout(
                ErrorCode.WRITE_TIMEOUT, messages.WRITE_TIMEOUT.format(id=conn.id), connection_id=conn.id
            )
        return out.bytes_written

    code = (step.get("micropython") or "").encode()
    async with conn.tx.turn():
        outcome = await micropython_run.run_script(
            conn, code, timeout_s=timeout_ms / 1000, interrupt=interrupt, write=send
        )
    stdout, stdout_enc = encode_output(outcome.stdout, "utf8")
    stderr, _ = encode_output(outcome.stderr, "utf8")
    shown = results.ReadResult(
        data=stdout,
        encoding=stdout_enc,
        stop_reason="final",
        from_offset=outcome.mark_offset,
        next_offset=outcome.end_offset,
        bytes_lost=0,
        buffered_remaining=0,
        matched=True,
        state=conn.state,
    )
    return results.StepResult(
        step=index,
        ok=not outcome.stderr,
        bytes_written=outcome.bytes_written,
        read=shown,
        stdout=stdout,
        stderr=stderr,
        mode=outcome.mode,
    )
