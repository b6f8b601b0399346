"""Dialogs in one call: ``transact(steps=[...])`` runs send/expect steps server-side, in order.

Logging into a console (login → password → prompt → command → prompt) or an AT init sequence is one
call instead of eight to sixteen, and it runs at the device's pace, not the agent's. Each step is a
``transact`` of its own (mark before the write, read until ``expect``), or a ``read`` when it sends
nothing; the dialog stops at the first step whose ``expect`` did not arrive.
"""

from __future__ import annotations

from typing import Any

from serial_mcp import messages
from serial_mcp.core.encoding import encode_output
from serial_mcp.core.keys import encode_keys
from serial_mcp.engine import exchange, micropython_run, results, writing
from serial_mcp.engine.access import Caller
from serial_mcp.engine.option_types import StepSpec
from serial_mcp.engine.options import (
    READ_WINDOW,
    ReadOptions,
    TransactOptions,
    build,
    derive,
)
from serial_mcp.engine.services import Services
from serial_mcp.errors import ErrorCode, InvalidArgument, OperationTimeout

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
        return await exchange.transact(svc, caller, connection_id, opts)
    if opts.data or opts.keys:
        raise InvalidArgument(messages.STEPS_WITH_DATA)
    svc.writing(caller, connection_id, "transact", "write")
    return await run_steps(svc, caller, connection_id, opts)


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
    from serial_mcp.core.encoding import decode_input

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
        own = {
            "reply": step.get("reply"),
            "timeout_ms": step.get("timeout_ms"),
            "idle_ms": step.get("idle_ms"),
        }
        overrides: dict[str, Any] = {"match": step.get("expect"), "respond": step.get("respond")}
        overrides.update((k, v) for k, v in own.items() if v is not None)
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
            last = await exchange.transact(svc, caller, connection_id, one)
            written, read = last.write.bytes_written, last.read
            mark = last.mark_offset if mark is None else mark
            found += last.events or []
        else:
            read = await exchange.read(svc, caller, connection_id, _read_options(common, overrides, i))
            written = 0
            found += read.events or []
            read.events = None
        total_written += written
        ok = (
            read.matched
            if step.get("expect") is not None
            else read.stop_reason not in ("closed", "disconnected")
        )
        done.append(results.StepResult(step=i, ok=ok, bytes_written=written, read=read))
        if not ok:
            break
    final = done[-1].read
    # the write's tx_bytes is the port's count now: a micropython step writes outside transact
    tx_bytes = svc.connection(caller, connection_id, "write").tx.tx_bytes
    write = results.WriteResult(
        connection_id=final_connection(last, connection_id), bytes_written=total_written, tx_bytes=tx_bytes
    )
    outcome = results.TransactResult(
        write=write,
        read=final,  # the last step's (issue 26: a lean result does not repeat it)
        mark_offset=mark if mark is not None else final.from_offset,
        steps=done,
        steps_ok=all(s.ok for s in done) and len(done) == len(parsed),
        steps_given=len(parsed),
        events=found or None,
    )
    return outcome


def _read_options(common: TransactOptions, overrides: dict[str, Any], index: int) -> ReadOptions:
    """A step that sends nothing is a read with the transact's read window (every one of its
    options, ``frames`` and ``strip_ansi`` included) and the step's own overrides."""
    window = {name: getattr(common, name) for name in READ_WINDOW}
    window.update(overrides, encoding=common.read_encoding or common.encoding)
    return build(ReadOptions, f"steps[{index}]", **window)


def final_connection(last: results.TransactResult | None, connection_id: str) -> str:
    return last.write.connection_id if last is not None else connection_id


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
    read = results.ReadResult(
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
        read=read,
        stdout=stdout,
        stderr=stderr,
        mode=outcome.mode,
    )
