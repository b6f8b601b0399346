"""Typed tool results: each becomes a tool's ``outputSchema`` and its ``structuredContent``.

Field names are part of the contract in TOOLS.md. Kept flat and short: every byte of schema is
paid for in every agent session. Here the I/O results (read, write, transact, flush, capture_boot);
the port and connection tools' in ``results_ports``, the log and capture tools' in ``results_log``
(all importable from here, as before).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from serial_mcp import messages
from serial_mcp.core import frame_values
from serial_mcp.engine import summary_text
from serial_mcp.engine.results_log import (
    CaptureItem,
    CapturesResult,
    ChecksumResult,
    ClearLogResult,
    ExportResult,
    LogResult,
    RecordResult,
    TransferResultModel,
)
from serial_mcp.engine.results_ports import (
    BaudResult,
    BreakResult,
    CloseResult,
    ConnectionSummary,
    CursorStatus,
    LabPlace,
    LinesResult,
    ListConnectionsResult,
    ListPortsResult,
    OpenResult,
    Port,
    ProfileResult,
    ProfilesResult,
    ReconfigureResult,
    ReconnectResult,
    StatusResult,
    events_status,
    open_result,
)
from serial_mcp.serial.event_text import text_lines

__all__ = [  # this module's results, and the other families' re-exported (``results.StatusResult``)
    "BadFrame",
    "BaudResult",
    "BreakResult",
    "CaptureBootResult",
    "CaptureItem",
    "CapturesResult",
    "ChecksumResult",
    "ClearLogResult",
    "CloseResult",
    "ConnectionSummary",
    "CursorStatus",
    "ExportResult",
    "FlushResult",
    "Frame",
    "LabPlace",
    "LinesResult",
    "ListConnectionsResult",
    "ListPortsResult",
    "LogResult",
    "OpenResult",
    "Port",
    "ProfileResult",
    "ProfilesResult",
    "ReadResult",
    "ReconfigureResult",
    "ReconnectResult",
    "RecordResult",
    "StatusResult",
    "StepResult",
    "TransactResult",
    "TransferResultModel",
    "WriteResult",
    "events_status",
    "open_result",
]

_LITERAL = json.JSONEncoder(ensure_ascii=False)  # json.dumps builds an encoder per call for these options


def _q(text: str) -> str:
    """A payload as a JSON string literal: escapes CR/LF so the summary stays one line."""
    return _LITERAL.encode(text)


class Frame(BaseModel):
    index: int = 0
    data: str
    encoding: str = "utf8"
    offset: int
    t: float | None = None
    parsed: dict[str, Any] | None = None
    checksum_valid: bool | None = None
    bad: str | None = None  # issue 37: why a frame marked bad is bad (computed vs received checksum)

    def line(self, view: str = "both") -> str:
        """One frame for the one-line text: its kind (and message type) and checksum verdict first,
        so a model reading only text can tell good frames from bad; then what the parser understood
        (``fix=3D lat=… sv=11``, ``registers=[…]``), else the raw frame; with frames=parsed, the
        parsed fields as JSON."""
        kind = frame_values.label_of(self.parsed)
        verdict = {True: " ok", False: " BAD", None: ""}[self.checksum_valid]
        if self.bad:
            verdict += f" {self.bad}"
        head = f"#{self.index}{' ' + kind if kind else ''}{verdict}"
        values = frame_values.render(frame_values.values_of(self.parsed))
        if view == "parsed" and self.parsed:  # asked for the parsed fields themselves
            body = json.dumps(self.parsed, ensure_ascii=False, separators=(",", ":"))
        elif values:
            body = values
        elif self.parsed and self.parsed.get("protocol") in ("ubx", "rtcm3"):
            body = f"len={self.parsed.get('length')}"  # binary: its name says more than its hex
        else:
            body = _q(self.data)
        return f"{head}: {body}"


class BadFrame(BaseModel):
    # A frame the parser's ``validate`` dropped: where it would have been (``index`` among the
    # frames, ``offset``), why (``checksum``, ``invalid``) and how it starts. (A comment, not a
    # docstring: a model's docstring is published in its schema.)
    index: int
    offset: int
    reason: str
    excerpt: str


class ReadResult(BaseModel):
    data: str = ""
    encoding: str = "utf8"
    frames_view: str | None = None  # frames= of the call: parsed | raw | both
    stop_reason: str
    from_offset: int
    next_offset: int
    bytes_lost: int = 0
    buffered_remaining: int = 0
    matched: bool = False
    match_index: int | None = None
    match_offset: int | None = None
    cursor: str | None = None
    state: str = "open"
    frames: list[Frame] | None = None
    frames_dropped: int = 0
    frames_skipped: int = 0  # reply="match"|"tail:N" on a framed read: frames consumed, not returned
    # framed and summary reads: frames the print filter hid (esp_log); None, not 0, when none were:
    # a nullable extra is left out of the output schema (tools/list pays for every listed field)
    frames_filtered: int | None = None
    bytes_skipped: int = 0  # framed reads: bytes between frames that belong to none; reply: before it
    error: str | None = None
    responded: int | None = None
    ansi_stripped: int | None = None
    screen: list[str] | None = None
    events: list[dict[str, Any]] | None = None  # issue 24: events new to this caller (text: a line each)
    # read(summary=true): the window's summary (core/summary.py); its shape in the description
    counts: dict[str, Any] | None = Field(default=None, description=messages.R_COUNTS)
    answered: list[dict[str, Any]] | None = None  # standing rules that answered in this window: {on, offset}
    bad_frames: list[BadFrame] | None = None  # framed reads: the first frames validate dropped
    hint: str | None = None  # issue 37.8: a wait that heard nothing since the port opened, and why it may be
    held: str | None = None  # issue 39: a call by port opened this connection: its id, when it closes

    @model_validator(mode="after")
    def _derived(self) -> ReadResult:
        """What a lean result leaves out because it follows from what it keeps (see
        ``serial_mcp.answers``): a match index means matched, and a byte match's offset is the read's
        start plus its index."""
        for i, frame in enumerate(self.frames or []):
            frame.index = i  # a frame's index is its place in the list
        if self.match_index is not None:
            self.matched = True
            if self.frames is None and self.match_offset is None:
                self.match_offset = self.from_offset + self.match_index
        return self

    def summary(self) -> str:
        return (
            text_lines(self.events)
            + self._text()
            + "".join(
                messages.S_STANDING_ANSWERED.format(on=a["on"], offset=a["offset"])
                for a in self.answered or []
            )
            + (f"; {self.hint}" if self.hint else "")
            + _held(self.held)
        )

    def _text(self) -> str:
        lost = messages.S_LOST.format(n=self.bytes_lost) if self.bytes_lost else ""
        if self.counts is not None:
            return summary_text.summary_line(
                self.counts, self.from_offset, self.next_offset, self.stop_reason, lost
            ) + (messages.S_FRAMES_FILTERED.format(n=self.frames_filtered) if self.frames_filtered else "")
        if self.frames is not None:
            shown = "; ".join(f.line(self.frames_view or "both") for f in self.frames)
            return messages.S_READ_FRAMES.format(
                k=len(self.frames),
                start=self.from_offset,
                end=self.next_offset,
                stop=self.stop_reason,
                lost=lost,
                dropped=_dropped(self.frames_dropped, self.bad_frames)
                + (messages.S_FRAMES_SKIPPED.format(n=self.frames_skipped) if self.frames_skipped else "")
                + (messages.S_FRAMES_FILTERED.format(n=self.frames_filtered) if self.frames_filtered else "")
                + (messages.S_SKIPPED.format(n=self.bytes_skipped) if self.bytes_skipped else ""),
                error=f" error: {self.error}" if self.error else "",
                frames=shown,
            )
        skipped = messages.S_REPLY_SKIPPED.format(n=self.bytes_skipped) if self.bytes_skipped else ""
        return messages.S_READ.format(
            n=self.next_offset - self.from_offset,
            start=self.from_offset,
            end=self.next_offset,
            stop=self.stop_reason,
            lost=lost + skipped,
            enc="" if self.encoding == "utf8" else f" {self.encoding}",
            data=_q(self.data),
        )


def _dropped(n: int | None, named: list[BadFrame] | None) -> str:
    if not n:
        return ""
    if not named:
        return messages.S_DROPPED.format(n=n)
    items = ", ".join(f"#{b.index}@{b.offset} {b.reason} {_q(b.excerpt)}" for b in named)
    return messages.S_DROPPED_NAMED.format(n=n, items=items + (" …" if n > len(named) else ""))


class WriteResult(BaseModel):
    connection_id: str = ""  # "" in a lean transact result: the call's own connection
    bytes_written: int
    tx_bytes: int = 0
    # timeout: the device stopped taking data; stalled: it took no byte for the stall time
    stop_reason: Literal["complete", "timeout", "stalled"] = "complete"
    held: str | None = None  # issue 39: as ReadResult.held

    def summary(self) -> str:
        text = messages.S_WRITE.format(n=self.bytes_written, id=self.connection_id)
        if self.stop_reason == "stalled":
            text += messages.S_WRITE_STALLED
        elif self.stop_reason == "timeout":
            text += messages.S_WRITE_TIMED_OUT
        return text + _held(self.held)


def _held(note: str | None) -> str:
    return f"; {note}" if note else ""


class StepResult(BaseModel):
    step: int
    ok: bool
    bytes_written: int
    read: ReadResult
    stdout: str | None = None  # a micropython step: the script's output, and its traceback apart
    stderr: str | None = None
    mode: str | None = None  # raw-paste | raw


def _mpy_text(stdout: str, stderr: str | None) -> str:
    """A micropython step's text; one that raised leads with its exception (the last line)."""
    text = messages.S_MPY.format(out=_q(stdout), err=_q(stderr or ""))
    if not stderr:
        return text
    last = stderr.strip().splitlines()[-1] if stderr.strip() else stderr
    return messages.S_MPY_RAISED.format(error=_q(last[:120])) + "; " + text


class TransactResult(BaseModel):
    write: WriteResult
    read: ReadResult  # with steps, the last step's: a lean result leaves it out there (not repeated)
    mark_offset: int = -1  # a lean result leaves it out when the read starts there (the usual case)
    steps: list[StepResult] | None = None  # a dialog: each step's own result, in order
    steps_ok: bool | None = None
    steps_given: int | None = None  # issue 37.8: a dialog's steps as given (it stops at the first miss)
    events: list[dict[str, Any]] | None = None  # issue 24: as ReadResult.events
    held: str | None = None  # issue 39: as ReadResult.held

    @model_validator(mode="before")
    @classmethod
    def _last_step_read(cls, data: Any) -> Any:
        """A lean dialog result has no top-level ``read``: it is the last step's."""
        if isinstance(data, dict) and "read" not in data and data.get("steps"):
            last = data["steps"][-1]
            return {**data, "read": last.get("read") if isinstance(last, dict) else last.read}
        return data

    @model_validator(mode="after")
    def _mark(self) -> TransactResult:
        if self.mark_offset < 0:
            self.mark_offset = self.read.from_offset
        return self

    @property
    def reply(self) -> ReadResult:
        """What was read (with steps, the last step's read): the same as ``read``."""
        return self.read

    def summary(self) -> str:
        return text_lines(self.events) + self._summary() + _held(self.held)

    def _summary(self) -> str:
        if self.steps is not None:
            ok = sum(1 for s in self.steps if s.ok)
            head = messages.S_STEPS.format(ok=ok, n=self.steps_given or len(self.steps))
            return f"{head}; " + " | ".join(
                f"{s.step}: " + (_mpy_text(s.stdout, s.stderr) if s.stdout is not None else s.read.summary())
                for s in self.steps
            )
        return f"{self.write.summary()}; {self.read.summary()}"


class FlushResult(BaseModel):
    connection_id: str
    target: str
    bytes_discarded: int

    def summary(self) -> str:
        return messages.S_FLUSH.format(id=self.connection_id, target=self.target, n=self.bytes_discarded)


class CaptureBootResult(BaseModel):
    mark_offset: int
    read: ReadResult
    bytes_before_mark: int = 0  # unread bytes that arrived before the mark: read(from="buffer_start")
    events: list[dict[str, Any]] | None = None  # issue 24: as ReadResult.events
    held: str | None = None  # issue 39: as ReadResult.held

    def summary(self) -> str:
        return text_lines(self.events) + self._summary() + _held(self.held)

    def _summary(self) -> str:
        before = messages.S_BEFORE_MARK.format(n=self.bytes_before_mark) if self.bytes_before_mark else ""
        return messages.S_CAPTURE.format(mark=self.mark_offset, read=self.read.summary()) + before
