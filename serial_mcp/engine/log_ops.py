"""Event-log and capture operations: get_log, clear_log, export_log, record, list_captures."""

from __future__ import annotations

import asyncio
import dataclasses
import weakref
from typing import TYPE_CHECKING, Any

from serial_mcp import messages
from serial_mcp.core.capture import CaptureEvent, event_line, header_line
from serial_mcp.core.eventlog import LOG_TYPES
from serial_mcp.core.unknown_keys import did_you_mean
from serial_mcp.engine import results
from serial_mcp.engine.access import Caller
from serial_mcp.engine.options import ExportOptions, LogOptions, NoOptions, RecordOptions
from serial_mcp.errors import AccessError, Conflict, ErrorCode, InvalidArgument, NotFound
from serial_mcp.serial import log_view
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.recorder import BUFFER_START, Recorder, Start, header_for, to_capture_event
from serial_mcp.store.captures import CaptureStore

if TYPE_CHECKING:
    from serial_mcp.engine.services import Services

MAX_LOG_LIMIT = 1000
MAX_LOG_RESPONSE_BYTES = 4 * 1024 * 1024  # as read's max_bytes: more is paged with since=next_since
EVENT_OVERHEAD = 160  # the JSON of one event besides its payload
MAX_RECORD_MS = 24 * 3600 * 1000


async def get_log_op(
    svc: Services, caller: Caller, connection_id: str, opts: LogOptions
) -> results.LogResult:
    """``get_log``: the connection's events, newest ``limit`` or those after ``since``."""
    return get_log(
        svc,
        caller,
        connection_id,
        limit=opts.limit,
        since=opts.since,
        payloads=opts.payloads,
        encoding=opts.encoding,
        kinds=opts.kinds,
    )


def get_log(
    svc: Services,
    caller: Caller,
    connection_id: str,
    *,
    limit: int = 100,
    since: int | None = None,
    payloads: bool = True,
    encoding: str | None = None,
    kinds: list[str] | None = None,
) -> results.LogResult:
    conn = svc.connection(caller, connection_id)
    wanted = None if kinds is None else _log_kinds(kinds)
    if isinstance(limit, bool) or not 1 <= limit <= MAX_LOG_LIMIT:
        raise InvalidArgument(messages.LOG_BAD_LIMIT.format(max=MAX_LOG_LIMIT))
    if since is not None and (isinstance(since, bool) or since < 0):
        raise InvalidArgument(messages.LOG_BAD_SINCE)
    items, selected, evicted = log_view.page(
        conn,
        limit=limit,
        since=since,
        payloads=payloads,
        encoding=encoding or "utf8",
        max_bytes=MAX_LOG_RESPONSE_BYTES,
        overhead=EVENT_OVERHEAD,
        kinds=wanted,
    )
    truncated = len(items) < selected
    next_seq = items[-1]["seq"] if items else (since or 0)
    return results.LogResult(
        connection_id=conn.id,
        events=items,
        last_seq=next_seq,
        evicted_events=evicted,
        truncated=truncated,
        next_since=next_seq if truncated else None,
    )


def _log_kinds(kinds: list[str]) -> frozenset[str]:
    """``get_log(kinds=...)`` checked: each a log type or a detected-event kind."""
    from serial_mcp.core.events import KINDS  # the detector's package: loaded by the first port opened

    allowed = (*LOG_TYPES, *KINDS)
    for kind in kinds:
        if kind not in allowed:
            raise InvalidArgument(
                messages.LOG_BAD_KINDS.format(value=kinds, bad=kind, allowed=", ".join(allowed))
                + did_you_mean(kind, allowed)
            )
    return frozenset(kinds)


async def clear_log(
    svc: Services, caller: Caller, connection_id: str, opts: NoOptions
) -> results.ClearLogResult:
    conn = svc.connection(caller, connection_id, "control")
    n = log_view.clear(conn)
    return results.ClearLogResult(connection_id=conn.id, events_cleared=n)


def export_lines(conn: Connection, note: str | None) -> tuple[list[str], int]:
    """The connection's log as capture lines (rx bytes from the ring; dropped ones as ``lost``)."""
    events, items, evicted = log_view.export_items(conn)
    base = events[0].t if events else conn.opened_at
    lines = [header_line(header_for(conn, base, note))]
    if evicted:
        lines.append(
            event_line(CaptureEvent(0.0, "marker", None, None, {"label": f"{evicted} older events evicted"}))
        )
    for e, payload, lost in items:
        t = max(0.0, e.t - base)
        if lost:
            lines.append(event_line(CaptureEvent(t, "lost", None, None, {"bytes": lost})))
        else:
            lines.append(event_line(to_capture_event(e, payload, base)))
    return lines, len(items)


async def export_log(
    svc: Services, caller: Caller, connection_id: str, opts: ExportOptions
) -> results.ExportResult:
    path, note = opts.path, opts.note
    conn = svc.connection(caller, connection_id)
    if not svc.captures.enabled:
        raise AccessError(ErrorCode.CAPTURE_DISABLED, messages.CAPTURE_DISABLED)
    lines, n = export_lines(conn, note)
    written_path, size = svc.captures.export(path, lines)
    return results.ExportResult(
        path=written_path.name, events_written=n, bytes_written=size, view=str(written_path.resolve())
    )


async def record(
    svc: Services, caller: Caller, connection_id: str, opts: RecordOptions
) -> results.RecordResult:
    """Start, stop or look at a recording; ``duration_ms`` makes a started one stop by itself."""
    action, path, note, duration_ms = opts.action, opts.path, opts.note, opts.duration_ms
    if opts.from_ is not None and action != "start":
        raise InvalidArgument(messages.RECORD_FROM_NOT_START)
    # looking is reading; starting or stopping the connection's one recorder is the owner's
    conn = svc.connection(caller, connection_id, "control" if action in ("start", "stop") else "read")
    if duration_ms is not None and (
        isinstance(duration_ms, bool)
        or not isinstance(duration_ms, int)
        or not 1 <= duration_ms <= MAX_RECORD_MS
    ):
        raise InvalidArgument(messages.RECORD_BAD_DURATION.format(max=MAX_RECORD_MS))
    if action == "start":
        if not path:
            raise InvalidArgument(messages.RECORD_NEEDS_PATH)
        dead = conn.recorder
        if dead is not None and not dead.active:  # it stopped by itself (disk full): make way
            await conn.stop_recording(dead.stopped_reason or "stopped")
        rec = start_recording(conn, svc.captures, path, note, start=_record_from(conn, opts.from_))
        _finished.pop(conn, None)
        if duration_ms is not None:
            _stop_later(conn, rec, duration_ms / 1000)
            result = _record_result(conn, rec, active=True)
            result.stops_in_ms = duration_ms
            return result
    elif action == "stop":
        rec = await conn.stop_recording("stopped")
        if rec is None:
            raise NotFound(
                ErrorCode.NOT_RECORDING, messages.NOT_RECORDING.format(id=conn.id), connection_id=conn.id
            )
        return _record_result(conn, rec, active=False)
    if conn.recorder is None and conn in _finished:  # stopped by its duration: its file and reason
        result = _record_result(conn, _finished[conn], active=False)
        result.stopped_reason = result.stopped_reason or "duration"  # (its file may still be closing)
        return result
    return _record_result(conn, conn.recorder, active=conn.recorder is not None)


def _stop_later(conn: Connection, rec: Recorder, delay: float) -> None:
    """Stop this recording after ``delay`` seconds (not a later one on the same connection)."""
    loop = asyncio.get_running_loop()

    def stop() -> None:
        if conn.recorder is rec:
            task = loop.create_task(conn.stop_recording("duration"))
            _timers.add(task)
            task.add_done_callback(_timers.discard)
            _finished[conn] = rec  # record(status) still tells of it, until the next start

    loop.call_later(delay, stop)


_timers: set[asyncio.Task[Any]] = set()
# issue 26: the recording a duration_ms stopped, per connection (forgotten with the connection)
_finished: weakref.WeakKeyDictionary[Connection, Recorder] = weakref.WeakKeyDictionary()


async def list_captures(
    svc: Services, caller: Caller, target: None, opts: NoOptions
) -> results.CapturesResult:
    store = svc.captures
    if not store.enabled:
        raise AccessError(ErrorCode.CAPTURE_DISABLED, messages.CAPTURE_DISABLED)
    items = [results.CaptureItem(**dataclasses.asdict(i)) for i in store.list()]  # the same fields
    return results.CapturesResult(directory=str(store.directory), captures=items)


def _record_from(conn: Connection, value: int | str | None) -> Start:
    """``record(from=…)``: now (the default), ``"buffer_start"`` or an RX offset up to the newest byte."""
    if value is None or value == "now":
        return None
    if value == BUFFER_START:
        return BUFFER_START
    end = conn.rx.status().end_offset
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= end:
        raise InvalidArgument(messages.RECORD_BAD_FROM.format(value=value, end=end))
    return value


def start_recording(
    conn: Connection, store: CaptureStore, name: str, note: str | None = None, start: Start = BUFFER_START
) -> Recorder:
    """Record ``conn`` into ``name`` from ``start`` (default: the connection's first byte, as
    ``open(record=…)`` promises; ``record(action="start")`` passes its ``from``, now by default)."""
    if conn.recorder is not None:
        raise Conflict(
            ErrorCode.ALREADY_RECORDING,
            messages.ALREADY_RECORDING.format(id=conn.id, path=conn.recorder.path.name),
            connection_id=conn.id,
        )
    file, path, room = store.create_recording(name)
    rec = Recorder(conn, file, path, room, note, start)
    conn.start_recording(rec)
    return rec


def _record_result(conn: Connection, rec: Recorder | None, active: bool) -> results.RecordResult:
    if rec is None:
        return results.RecordResult(connection_id=conn.id, recording=False)
    return results.RecordResult(
        connection_id=conn.id,
        recording=active and rec.active,
        path=rec.path.name,
        absolute_path=str(rec.path.resolve()),
        events_written=rec.events_written,
        bytes_written=rec.bytes_written,
        stopped_reason=rec.stopped_reason,
        start_offset=rec.start_offset,
        bytes_lost=rec.bytes_lost,
    )
