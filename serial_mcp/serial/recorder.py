"""Recorder: streams every event of a connection into a capture file as it happens.

The connection calls ``on_event`` from the pump thread (rx) and the loop (everything else); it
only enqueues. One writer thread turns events into capture lines, flushes whenever it has caught
up (so a crash loses at most what was still queued), stops cleanly at the size quota with a
marker, and fsyncs on stop. The file is valid JSON Lines at every flush.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from serial_mcp import __version__
from serial_mcp.core.capture import CaptureEvent, CaptureHeader, event_line, header_line, settings_to_header
from serial_mcp.core.eventlog import LogEvent
from serial_mcp.serial.connection import Connection

log = logging.getLogger(__name__)

_STOP = object()


def to_capture_event(event: LogEvent, payload: bytes | None, base: float) -> CaptureEvent:
    """A log event as a capture event, ``t`` relative to ``base`` (the header's ``created``)."""
    t = max(0.0, event.t - base)
    if event.type == "rx":
        return CaptureEvent(t, "rx", payload, event.offset)
    if event.type == "tx":
        return CaptureEvent(t, "tx", payload if payload is not None else event.data)
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


def header_for(conn: Connection, created: float, note: str | None = None) -> CaptureHeader:
    return CaptureHeader(
        created=datetime.fromtimestamp(created, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        port=conn.port,
        settings=settings_to_header(conn.settings),
        source=f"serial-mcp {__version__}",
        note=note,
    )


class Recorder:
    """One recording of one connection into one open file."""

    def __init__(
        self, conn: Connection, file: IO[bytes], path: Path, max_bytes: int, note: str | None = None
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
        self._base = self.started
        self._write(header_line(header_for(conn, self._base, note)) + "\n")
        self._file.flush()
        self._thread = threading.Thread(target=self._run, name=f"recorder-{conn.id}", daemon=True)
        self._thread.start()

    def on_event(self, event: LogEvent, payload: bytes | None) -> None:
        """Listener hook: called with the connection's lock held, so it only enqueues."""
        self._queue.put((event, payload))

    def _write(self, text: str) -> bool:
        data = text.encode("utf-8")
        if self.bytes_written + len(data) > self.max_bytes:
            return False
        self._file.write(data)
        self.bytes_written += len(data)
        return True

    def _run(self) -> None:
        try:
            while True:
                item = self._queue.get()
                if item is _STOP:
                    break
                if self.stopped_reason is None:
                    event, payload = item
                    line = event_line(to_capture_event(event, payload, self._base)) + "\n"
                    if self._write(line):
                        self.events_written += 1
                    else:
                        self.stopped_reason = "quota"
                        marker = CaptureEvent(
                            max(0.0, time.time() - self._base),
                            "marker",
                            None,
                            None,
                            {"label": "recording stopped: file quota reached"},
                        )
                        self._file.write((event_line(marker) + "\n").encode())
                if self._queue.empty():
                    self._file.flush()  # caught up: make it durable against a crash of this process
        except Exception:  # a broken disk must not take the server down; the status says it stopped
            log.exception("recorder for %s failed", self.conn.id)
            self.stopped_reason = self.stopped_reason or "error"
        finally:
            try:
                self._file.flush()
                import os

                os.fsync(self._file.fileno())
            finally:
                self._file.close()
                self._done.set()

    def stop(self, reason: str = "stopped") -> None:
        """Finish writing everything queued, fsync and close (blocking; call off the event loop)."""
        self._queue.put(_STOP)
        self._done.wait(30)
        self.stopped_reason = self.stopped_reason or reason

    @property
    def active(self) -> bool:
        return not self._done.is_set() and self.stopped_reason is None
