"""Recorder: streams every event of a connection into a capture file as it happens.

The connection calls ``on_event`` from the pump thread (rx) and the loop (everything else); it
only enqueues. One writer thread turns events into capture lines, flushes whenever it has caught
up (so a crash loses at most what was still queued), stops cleanly at the size quota with a
marker, and fsyncs on stop. The file is valid JSON Lines at every flush.

A disk that cannot keep up (a stalled network share, a slow SD card under a 1 MB/s port) must not
grow the server: once ``MAX_BACKLOG`` bytes wait for the writer, the recording stops taking events
(``stopped_reason`` says so at once), writes what it holds, and ends with a marker; the port carries on.

A recording starts at an RX offset (issue 37): ``"buffer_start"`` (the connection's first byte, as
``open(record=…)`` and the CLI's ``record`` do), an absolute offset, or now. What the connection
received and logged from there until the recorder attaches is written first, from the ring and the
log, in the same hold of the connection's lock as the attach: nothing is missed or written twice.
Bytes the ring had already dropped are a ``lost`` line; the header's ``start_offset`` says where
the capture starts.
"""

from __future__ import annotations

import contextlib
import heapq
import io
import logging
import os
import queue
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from serial_mcp import messages
from serial_mcp.core.capture import CaptureEvent, CaptureHeader, event_line, header_line, settings_to_header
from serial_mcp.core.eventlog import LogEvent
from serial_mcp.errors import storage_error
from serial_mcp.serial.connection import Connection
from serial_mcp.version import __version__

log = logging.getLogger(__name__)

_STOP = object()
_BEHIND = object()  # queued when the backlog passed MAX_BACKLOG: nothing follows it but _STOP
MAX_BACKLOG = 64 << 20  # bytes of events waiting for the disk
_QUEUED_EVENT_COST = 128  # bytes one queued event holds beyond its payload, roughly


def to_capture_event(event: LogEvent, payload: bytes | None, base: float) -> CaptureEvent:
    """A log event as a capture event, ``t`` relative to ``base`` (the header's ``created``)."""
    t = max(0.0, event.t - base)
    if event.type == "rx":
        return CaptureEvent(t, "rx", payload, event.offset)
    if event.type == "tx":  # a respond rule's answer keeps its mark (respond: true)
        extra = {"respond": True} if event.fields.get("respond") else {}
        return CaptureEvent(t, "tx", payload if payload is not None else event.data, None, extra)
    fields = {k: v for k, v in event.fields.items() if v is not None}
    if event.type in ("open", "close", "control", "break", "config", "marker", "error", "lost"):
        if event.type == "config" and "settings" in fields and isinstance(fields["settings"], dict):
            fields["settings"] = _settings_names(fields["settings"])
        return CaptureEvent(t, event.type, None, None, fields)
    return CaptureEvent(t, "marker", None, None, {"label": event.type, **fields})


def _settings_names(settings: dict[str, Any]) -> dict[str, Any]:
    from serial_mcp.core.settings import SerialSettings

    try:
        return settings_to_header(SerialSettings(**settings))
    except TypeError:
        return settings


def header_for(
    conn: Connection, created: float, note: str | None = None, start_offset: int | None = None
) -> CaptureHeader:
    return CaptureHeader(
        created=datetime.fromtimestamp(created, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        port=conn.port,
        settings=settings_to_header(conn.settings),
        source=f"serial-mcp {__version__}",
        note=note,
        start_offset=start_offset,
    )


BUFFER_START = "buffer_start"
Start = str | int | None  # None: now; "buffer_start": the connection's first byte; int: that RX offset


def starting_point(conn: Connection, start: Start) -> tuple[int, float, int]:
    """(RX offset, time base, first log seq) a recording from ``start`` begins at; the caller holds
    the connection's lock. A non-rx log event is the recording's from that seq on."""
    ring, log = conn.ring, conn.log
    if start is None:
        return ring.end_offset, time.time(), log.next_seq
    if start == BUFFER_START:
        return 0, conn.opened_at, 0
    offset = int(start)
    base = ring.time_at(offset) if offset < ring.end_offset else None
    if base is None:  # at the end (nothing yet), or dropped by the ring: it starts now
        base = time.time()
    first = next((e.seq for e in log.since(0) if e.t >= base), log.next_seq)
    return offset, base, first


class Recorder:
    """One recording of one connection into one open file.

    If the file fails (ENOSPC, EROFS, EIO) the recording stops at once: it detaches itself from the
    connection, drops what was queued, closes the file, logs one line and says why in
    ``stopped_reason`` (``storage error: ...``) — the port carries on untouched.
    """

    def __init__(
        self,
        conn: Connection,
        file: IO[bytes],
        path: Path,
        max_bytes: int,
        note: str | None = None,
        start: Start = None,
    ) -> None:
        self.conn = conn
        self.path = path
        self.max_bytes = max_bytes
        self.bytes_written = 0
        self.events_written = 0
        self.stopped_reason: str | None = None
        self.started = time.time()
        self._file = file
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._done = threading.Event()
        self._dead = False  # the file failed, or the disk fell behind: take nothing more
        self._quota_reached = False
        # The backlog is queued - taken; each counter has one writer (on_event runs under the
        # connection's lock; the writer thread takes), so neither loses an update.
        self._queued_bytes = 0
        self._taken_bytes = 0
        with conn.thread_lock:
            self.start_offset, self._base, self._first_seq = starting_point(conn, start)
        self.bytes_lost = 0  # bytes from start_offset the ring had dropped before the recording began
        try:
            self._write(header_line(header_for(conn, self._base, note, self.start_offset)) + "\n")
            self._file.flush()
        except OSError as exc:  # the disk refused the very first line: nothing to record on
            with contextlib.suppress(Exception):
                file.close()
            raise storage_error(exc) from exc
        self._thread = threading.Thread(target=self._run, name=f"recorder-{conn.id}", daemon=True)
        self._thread.start()

    def catch_up(self) -> None:
        """Queue what arrived and was logged since the start point (the connection calls this with
        its lock held, just before it attaches ``on_event``): rx chunks from the ring, at their arrival
        times, merged in time order with the log's other events; dropped bytes as one ``lost`` line."""
        conn, ring = self.conn, self.conn.ring
        kept = max(self.start_offset, ring.start_offset)
        self.bytes_lost = kept - self.start_offset
        if self.bytes_lost:
            lost = LogEvent(0, self._base, "lost", {"bytes": self.bytes_lost})
            self._queue.put((lost, None, False))
        chunks: list[tuple[float, LogEvent, bytes | None]] = []
        if ring.end_offset > kept:
            data, prev = ring.read(kept).data, kept
            for end, t in ring.stamps(kept, ring.end_offset):
                chunks.append(
                    (t, LogEvent(0, t, "rx", offset=prev, length=end - prev), data[prev - kept : end - kept])
                )
                prev = end
        others = [(e.t, e, e.data) for e in conn.log.since(self._first_seq - 1) if e.type != "rx"]
        # not counted in the backlog: a copy of the ring (bounded by its size), not a disk falling behind
        for _t, event, payload in heapq.merge(others, chunks, key=lambda item: item[0]):
            self._queue.put((event, payload, False))

    def on_event(self, event: LogEvent, payload: bytes | None) -> None:
        """Listener hook: called with the connection's lock held, so it only enqueues."""
        if self._dead or self._quota_reached:
            return
        if self._queued_bytes - self._taken_bytes > MAX_BACKLOG:  # the event that crossed it was kept
            self._dead = True
            self.stopped_reason = messages.RECORDER_BEHIND_REASON.format(mib=MAX_BACKLOG >> 20)
            self._queue.put(_BEHIND)
            return
        self._queued_bytes += _QUEUED_EVENT_COST + (len(payload) if payload else 0)
        self._queue.put((event, payload, True))

    @property
    def queued(self) -> int:
        """Events waiting for the writer thread."""
        return self._queue.qsize()

    @property
    def thread_alive(self) -> bool:
        return self._thread.is_alive()

    def _write(self, text: str) -> bool:
        data = text.encode("utf-8")
        if self.bytes_written + len(data) > self.max_bytes:
            return False
        self._file.write(data)
        self.bytes_written += len(data)
        return True

    def _run(self) -> None:
        try:
            self._write_until_stopped()
        except Exception as exc:  # a full or read-only disk must not take the server down, nor grow it
            self._die(exc)
        finally:
            self._finish()

    def _write_until_stopped(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            if item is _BEHIND:
                self._fell_behind()
            else:
                event, payload, counted = item
                if counted:
                    self._taken_bytes += _QUEUED_EVENT_COST + (len(payload) if payload else 0)
                if not self._quota_reached:
                    self._write_event(event, payload)
            if self._queue.empty():
                self._file.flush()  # caught up: make it durable against a crash of this process

    def _write_event(self, event: LogEvent, payload: bytes | None) -> None:
        line = event_line(to_capture_event(event, payload, self._base)) + "\n"
        if self._write(line):
            self.events_written += 1
            return
        self._quota_reached = True  # take nothing more: the file is full
        self.stopped_reason = self.stopped_reason or "quota"
        self._write_marker(messages.RECORDER_QUOTA_MARKER, force=True)

    def _write_marker(self, label: str, force: bool = False) -> None:
        marker = CaptureEvent(max(0.0, time.time() - self._base), "marker", None, None, {"label": label})
        line = event_line(marker) + "\n"
        if force:  # the quota's own marker goes past the quota, as it always did
            self._file.write(line.encode())
        else:
            self._write(line)

    def _fell_behind(self) -> None:
        """Everything queued before the backlog passed the bound is written: say why it ends."""
        log.warning(messages.RECORDER_BEHIND_LOG, self.conn.id, MAX_BACKLOG >> 20)
        self.conn.remove_listener(self.on_event)
        if not self._quota_reached:
            self._write_marker(messages.RECORDER_BEHIND_MARKER.format(mib=MAX_BACKLOG >> 20))

    def _die(self, exc: BaseException) -> None:
        """Stop taking events, let go of the connection's listener and of everything queued."""
        self._dead = True
        error = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
        self.stopped_reason = f"storage error: {error}"
        log.warning(messages.RECORDER_STORAGE_STOPPED, self.conn.id, error)
        self.conn.remove_listener(self.on_event)
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break

    def _finish(self) -> None:
        """Flush, fsync and close — each step may fail on a broken disk; none of them may hang ``stop``."""
        try:
            for step in (self._file.flush, self._fsync, self._file.close):
                try:
                    step()
                except (OSError, ValueError) as exc:
                    if not self._dead:
                        self._die(exc)
            if not self._file.closed:
                with contextlib.suppress(Exception):
                    self._file.close()
        finally:
            self._done.set()

    def _fsync(self) -> None:
        try:
            fd = self._file.fileno()
        except io.UnsupportedOperation:  # an in-memory file: nothing to make durable
            return
        os.fsync(fd)

    def stop(self, reason: str = "stopped") -> None:
        """Finish writing everything queued, fsync and close (blocking; call off the event loop).
        After the file failed the writer has already ended: this returns at once."""
        if not self._done.is_set():
            self._queue.put(_STOP)
            self._done.wait(30)
        self.stopped_reason = self.stopped_reason or reason

    @property
    def active(self) -> bool:
        return not self._done.is_set() and self.stopped_reason is None
