"""The read algorithm: gather bytes from a cursor or offset until a stop condition, without polling.

Stop conditions, first one wins: ``match`` found, ``max_bytes`` gathered, the line quiet for
``idle_ms`` after data arrived, ``timeout_ms`` elapsed, the port disconnected or closed. History is
checked before waiting, so a reply that already arrived is found at once. What a read returns is
always one contiguous run ``[from_offset, next_offset)`` plus the bytes lost before it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

from serial_mcp import messages
from serial_mcp.core.cursors import DEFAULT_CURSOR
from serial_mcp.core.encoding import ENCODINGS, utf8_complete_length
from serial_mcp.core.match import Matcher, Span
from serial_mcp.errors import InvalidArgument, SerialMcpError
from serial_mcp.serial.connection import Connection

DEFAULT_TIMEOUT_MS = 1000
MAX_TIMEOUT_MS = 600_000
DEFAULT_IDLE_MS = 100
DEFAULT_MAX_BYTES = 65536
MAX_MAX_BYTES = 4 * 1024 * 1024

StopReason = Literal["match", "max_bytes", "idle", "timeout", "disconnected", "closed", "overrun"]
From = int | Literal["cursor", "now", "buffer_start"]


@dataclass(frozen=True, slots=True)
class ReadRequest:
    """A validated read: where to start, when to stop, how to render."""

    from_: From = "cursor"
    cursor: str = DEFAULT_CURSOR
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    idle_ms: int | None = None
    max_bytes: int = DEFAULT_MAX_BYTES
    matcher: Matcher | None = None
    encoding: str = "utf8"

    @property
    def effective_idle_ms(self) -> int | None:
        """Silence that ends a read: explicit, or a short default for a plain read without ``match``."""
        if self.idle_ms is not None:
            return self.idle_ms
        return None if self.matcher is not None else DEFAULT_IDLE_MS


def build_read_request(
    *,
    from_: Any = "cursor",
    cursor: str | None = None,
    timeout_ms: int | None = None,
    idle_ms: int | None = None,
    max_bytes: int | None = None,
    match: Any = None,
    encoding: str | None = None,
) -> ReadRequest:
    """Validate every read argument up front (``transact`` calls this before it writes anything)."""
    if from_ is None:
        from_ = "cursor"
    if isinstance(from_, bool) or not (
        from_ in ("cursor", "now", "buffer_start") or (isinstance(from_, int) and from_ >= 0)
    ):
        if isinstance(from_, str) and from_.isdigit():
            from_ = int(from_)
        else:
            raise InvalidArgument(messages.READ_BAD_FROM.format(value=from_))
    t = DEFAULT_TIMEOUT_MS if timeout_ms is None else timeout_ms
    if not 0 <= t <= MAX_TIMEOUT_MS:
        raise InvalidArgument(messages.READ_BAD_TIMEOUT.format(value=t, max=MAX_TIMEOUT_MS))
    if idle_ms is not None and not 1 <= idle_ms <= MAX_TIMEOUT_MS:
        raise InvalidArgument(messages.READ_BAD_IDLE.format(value=idle_ms, max=MAX_TIMEOUT_MS))
    mb = DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
    if not 1 <= mb <= MAX_MAX_BYTES:
        raise InvalidArgument(messages.READ_BAD_MAX_BYTES.format(value=mb, max=MAX_MAX_BYTES))
    enc = encoding or "utf8"
    if enc not in ENCODINGS:
        raise InvalidArgument(
            messages.BAD_ENCODING.format(field="encoding", value=enc, allowed=", ".join(ENCODINGS))
        )
    matcher = Matcher.from_spec(match) if match is not None else None
    return ReadRequest(from_, cursor or DEFAULT_CURSOR, t, idle_ms, mb, matcher, enc)


@dataclass(frozen=True, slots=True)
class ReadOutcome:
    """The raw result of a read; the MCP layer renders it."""

    data: bytes
    from_offset: int
    next_offset: int
    bytes_lost: int
    stop_reason: StopReason
    buffered_remaining: int
    match: Span | None  # relative to ``data``
    cursor: str | None  # the cursor that was advanced, if any


def resolve_start(conn: Connection, req: ReadRequest) -> int:
    """The absolute offset a read starts at (creates a named cursor on first use)."""
    snap = conn.snapshot()
    if req.from_ == "cursor":
        with conn.lock:
            return conn.cursors.get(req.cursor, snap.start_offset).offset
    if req.from_ == "now":
        return snap.end_offset
    if req.from_ == "buffer_start":
        return snap.start_offset
    assert isinstance(req.from_, int)
    if req.from_ > snap.end_offset:
        raise InvalidArgument(messages.READ_FROM_FUTURE.format(value=req.from_, end=snap.end_offset))
    return req.from_


async def read(conn: Connection, req: ReadRequest, start: int | None = None) -> ReadOutcome:
    """Run one read. ``start`` overrides ``req.from_`` (``transact`` passes its pre-write mark)."""
    if conn.state == "closed":
        raise SerialMcpError("connection_closed", messages.CONNECTION_CLOSED.format(id=conn.id))
    begin = resolve_start(conn, req) if start is None else start
    deadline = time.monotonic() + req.timeout_ms / 1000
    idle = req.effective_idle_ms
    buf = bytearray()
    from_offset = begin
    lost = 0
    searched = 0
    span: Span | None = None
    stop: StopReason | None = None
    first = True
    while True:
        pos = from_offset + len(buf)
        rr = conn.read_ring(pos, req.max_bytes - len(buf))
        if rr.bytes_lost:
            if first:
                lost, from_offset = rr.bytes_lost, rr.from_offset
            else:  # the ring overran us mid-read: return the contiguous part; the next read reports the gap
                stop = "overrun"
                break
        first = False
        buf += rr.data
        if req.matcher is not None and len(buf) > searched:
            span = req.matcher.find(bytes(buf), searched)
            searched = len(buf)
            if span is not None:
                del buf[span.end :]
                stop = "match"
                break
        if len(buf) >= req.max_bytes:
            stop = "max_bytes"
            break
        snap = conn.snapshot()
        now = time.monotonic()
        if snap.end_offset > from_offset + len(buf):
            continue  # more arrived while we worked
        if snap.state in ("closed", "disconnected"):
            stop = snap.state
            break
        # "reconnecting": keep waiting; the timeout still holds and a reconnect wakes us
        wait = deadline - now
        if idle is not None and buf and snap.last_rx_time is not None:
            quiet = time.time() - snap.last_rx_time
            if quiet * 1000 >= idle:
                stop = "idle"
                break
            wait = min(wait, idle / 1000 - quiet)
        if wait <= 0:
            stop = "timeout"
            break
        await conn.wait_change(wait, snap.end_offset)

    conn.bytes_lost_total += lost
    data = bytes(buf)
    if req.encoding == "utf8" and stop not in ("match", "disconnected", "closed"):
        data = data[: utf8_complete_length(data)]  # a torn character stays buffered for the next read
    next_offset = from_offset + len(data)
    advanced: str | None = None
    snap = conn.snapshot()
    if req.from_ == "cursor":
        # A plain read consumes what it returned; transact (explicit start) moves the cursor past its reply.
        with conn.lock:
            cur = conn.cursors.get(req.cursor, snap.start_offset)
            cur.offset = next_offset if start is None else max(cur.offset, next_offset)
        advanced = req.cursor
    return ReadOutcome(
        data=data,
        from_offset=from_offset,
        next_offset=next_offset,
        bytes_lost=lost,
        stop_reason=stop,
        buffered_remaining=max(0, snap.end_offset - next_offset),
        match=span,
        cursor=advanced,
    )
