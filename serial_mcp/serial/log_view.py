"""The event log read together with the RX ring: rx events carry offsets, their bytes are in the ring.

Both move under the connection's thread lock (the pump appends to them together), so every view
here is taken in one hold of it: ``page`` for ``get_log``, ``export_items`` for ``export_log``.
The engine calls these; it never takes the lock itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple

from serial_mcp.core.encoding import encode_output
from serial_mcp.core.eventlog import LogEvent

if TYPE_CHECKING:
    from serial_mcp.serial.connection import Connection


class LogPage(NamedTuple):
    items: list[dict[str, Any]]  # the events as JSON, oldest first
    selected: int  # how many events the query selected (more than ``items``: the page was cut)
    evicted: int  # events the log dropped over its life (it keeps the newest)


def _event_dict(conn: Connection, event: LogEvent, payloads: bool, encoding: str) -> dict[str, Any]:
    """One log event as JSON; rx bytes come from the ring (``lost: true`` once it dropped them).
    Called with the thread lock held, so the ring cannot move underneath."""
    out: dict[str, Any] = {"seq": event.seq, "t": round(event.t, 6), "type": event.type, **event.fields}
    payload: bytes | None = event.data
    if event.type == "rx" and event.offset is not None and event.length is not None:
        out["offset"], out["length"] = event.offset, event.length
        if payloads:
            if event.offset < conn.ring.start_offset:
                out["lost"] = True
                payload = None
            else:
                payload = conn.ring.read(event.offset, event.length).data
    elif payload is not None:
        out["length"] = len(payload)
    if payloads and payload is not None:
        out["data"], out["encoding"] = encode_output(payload, encoding)
    return out


def _of_kinds(kinds: frozenset[str]) -> Callable[[LogEvent], bool]:
    """Keeps the entries of those log types, and the detected events of those event kinds."""

    def keep(event: LogEvent) -> bool:
        if event.type in kinds:
            return True
        found = event.fields.get("event") if event.type == "event" else None
        return isinstance(found, dict) and found.get("kind") in kinds

    return keep


def page(
    conn: Connection,
    *,
    limit: int,
    since: int | None,
    payloads: bool,
    encoding: str,
    max_bytes: int,
    overhead: int,
    kinds: frozenset[str] | None = None,
) -> LogPage:
    """The newest ``limit`` events (or those after ``since``) of ``kinds`` (log types or event kinds; None:
    all), oldest first, until the answer is ``max_bytes`` big (each event counted as ``overhead`` plus its
    encoded payload; one at least)."""
    keep = None if kinds is None else _of_kinds(kinds)
    with conn.thread_lock:
        events = conn.log.tail(limit, keep) if since is None else conn.log.since(since, limit, keep)
        items: list[dict[str, Any]] = []
        size = 0
        for e in events:
            item = _event_dict(conn, e, payloads, encoding)
            size += overhead + len(item.get("data", ""))
            if items and size > max_bytes:
                break
            items.append(item)
        return LogPage(items, len(events), conn.log.evicted_events)


def clear(conn: Connection) -> int:
    """Empty the event log; returns how many events it held."""
    with conn.thread_lock:
        return conn.log.clear()


class ExportItems(NamedTuple):
    events: list[LogEvent]  # the whole log as it was (the export's base time is the first one's)
    items: list[tuple[LogEvent, bytes | None, int]]  # (event, payload, bytes lost: a ``lost`` line)
    evicted: int


def export_items(conn: Connection) -> ExportItems:
    """The whole log with rx payloads from the ring; bytes the ring dropped become a ``lost`` item
    (an event partly dropped: a ``lost`` item, then the event trimmed to what is left)."""
    with conn.thread_lock:
        events = conn.log.since(0)
        start = conn.ring.start_offset
        items: list[tuple[LogEvent, bytes | None, int]] = []
        for e in events:
            payload = e.data
            if e.type == "rx" and e.offset is not None and e.length is not None:
                if e.offset + e.length <= start:
                    items.append((e, None, e.length))
                    continue
                begin = max(e.offset, start)
                payload = conn.ring.read(begin, e.offset + e.length - begin).data
                if begin > e.offset:  # partly dropped
                    items.append((e, None, begin - e.offset))
                    e = replace(e, offset=begin, length=len(payload))
            items.append((e, payload, 0))
        return ExportItems(events, items, conn.log.evicted_events)
