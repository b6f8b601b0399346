"""Typed results of the log, capture and data tools: get_log, clear_log, export_log, record,
list_captures, checksum and the file transfers. Field names are part of the contract in TOOLS.md.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from serial_mcp import messages
from serial_mcp.serial.event_text import rank


class ChecksumResult(BaseModel):
    algorithm: str
    checksum: int
    checksum_hex: str
    width_bytes: int
    wire_hex: str = ""  # the checksum's bytes as they go on the wire, in byte_order
    byte_order: str = "big"

    def summary(self) -> str:
        return messages.S_CHECKSUM.format(
            algorithm=self.algorithm, hex=self.checksum_hex, value=self.checksum
        ) + (
            messages.S_CHECKSUM_WIRE.format(order=self.byte_order, wire=self.wire_hex)
            if self.wire_hex != self.checksum_hex  # said only when the wire order differs
            else ""
        )


LOG_TEXT_EVENTS = 10  # detected events named in get_log's text (the rest are counted)


class LogResult(BaseModel):
    connection_id: str
    events: list[dict[str, Any]]
    last_seq: int
    evicted_events: int
    truncated: bool = False  # cut at the response size cap: more events follow
    next_since: int | None = None  # with truncated: call again with since=next_since

    def summary(self) -> str:
        kinds: dict[str, int] = {}
        for e in self.events:
            kinds[str(e.get("type"))] = kinds.get(str(e.get("type")), 0) + 1
        text = messages.S_LOG.format(
            n=len(self.events),
            id=self.connection_id,
            kinds=json.dumps(kinds),
            last=self.last_seq,
            evicted=messages.S_EVICTED.format(n=self.evicted_events) if self.evicted_events else "",
        )
        text += self._event_lines()
        return text + messages.S_LOG_TRUNCATED.format(since=self.next_since) if self.truncated else text

    def _event_lines(self) -> str:
        """The detected events of this page, a labelled line each, most important first (every boot loop;
        at most ``LOG_TEXT_EVENTS`` lines in all), so the text names the crash and where it happened."""
        found = [e for e in self.events if e.get("type") == "event" and isinstance(e.get("event"), dict)]
        if not found:
            return ""
        found.sort(key=lambda e: rank(e["event"].get("kind"), e["event"].get("severity")))
        kept = LOG_TEXT_EVENTS
        shown = [e for i, e in enumerate(found) if i < kept or e["event"].get("kind") == "boot_loop"]
        line = messages.S_LOG_EVENT_LINE
        text = messages.S_LOG_EVENTS_HEAD.format(n=len(found))
        text += "".join(line.format(seq=e["seq"], line=e.get("label", "")) for e in shown)
        if len(found) > len(shown):
            text += messages.S_LOG_EVENTS_MORE.format(n=len(found) - len(shown))
        return text


class ClearLogResult(BaseModel):
    connection_id: str
    events_cleared: int

    def summary(self) -> str:
        return messages.S_CLEAR_LOG.format(id=self.connection_id, n=self.events_cleared)


class ExportResult(BaseModel):
    path: str
    events_written: int
    bytes_written: int
    view: str | None = None  # the command that shows the capture as an HTML page

    def summary(self) -> str:
        hint = " " + messages.VIEW_HINT.format(path=self.view) if self.view else ""
        return messages.S_EXPORT.format(path=self.path, n=self.events_written, b=self.bytes_written) + hint


class RecordResult(BaseModel):
    connection_id: str
    recording: bool
    path: str | None = None
    events_written: int = 0
    bytes_written: int = 0
    stopped_reason: str | None = None
    absolute_path: str | None = None  # where the capture file is on this machine
    stops_in_ms: int | None = None  # record(duration_ms=...): it stops by itself
    start_offset: int | None = None  # the RX offset the capture starts at (issue 37)
    bytes_lost: int = 0  # bytes from start_offset the ring had dropped before the recording began

    def summary(self) -> str:
        if self.path is None:
            return messages.S_NOT_RECORDING.format(id=self.connection_id)
        state = "recording" if self.recording else f"stopped ({self.stopped_reason or 'stopped'})"
        return messages.S_RECORD.format(
            id=self.connection_id,
            state=state,
            path=(self.absolute_path or self.path) + self._from(),
            n=self.events_written,
            b=self.bytes_written,
        ) + messages.S_RECORD_REPLAY.format(name=self.path)

    def _from(self) -> str:
        if self.start_offset is None:
            return ""
        lost = messages.S_RECORD_LOST.format(n=self.bytes_lost) if self.bytes_lost else ""
        return messages.S_RECORD_FROM.format(offset=self.start_offset) + lost


class CaptureItem(BaseModel):
    name: str
    size: int
    created: str | None = None
    port: str | None = None
    duration: float | None = None
    events: int | None = None
    error: str | None = None


class CapturesResult(BaseModel):
    directory: str
    captures: list[CaptureItem]

    def summary(self) -> str:
        names = ", ".join(
            messages.S_CAPTURE_ITEM.format(
                name=c.name, size=c.size, duration=f", {c.duration:.1f} s" if c.duration is not None else ""
            )
            for c in self.captures
        )
        return messages.S_CAPTURES.format(n=len(self.captures), dir=self.directory, names=names or "-")


class TransferResultModel(BaseModel):
    ok: bool
    bytes: int
    blocks: int
    retries: int
    cancelled: bool
    error: str | None = None
    files: list[dict[str, Any]] = []
    data: str | None = None

    def summary(self) -> str:
        state = "ok" if self.ok else ("cancelled" if self.cancelled else f"failed: {self.error}")
        return messages.S_TRANSFER.format(state=state, b=self.bytes, n=self.blocks, r=self.retries)
