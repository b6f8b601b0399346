"""Typed tool results: each becomes a tool's ``outputSchema`` and its ``structuredContent``.

Field names are part of the contract in TOOLS.md. Kept flat and short: every byte of schema is
paid for in every agent session.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr, model_validator

from serial_mcp import messages
from serial_mcp.core import frame_values
from serial_mcp.engine import summary_text
from serial_mcp.serial.event_watch import text_lines

_LITERAL = json.JSONEncoder(ensure_ascii=False)  # json.dumps builds an encoder per call for these options


def _q(text: str) -> str:
    """A payload as a JSON string literal: escapes CR/LF so the summary stays one line."""
    return _LITERAL.encode(text)


class LabPlace(BaseModel):
    """A labgrid place as ``list_ports`` shows it (issue 25)."""

    tags: dict[str, str] = {}
    comment: str = ""
    acquired_by: str | None = None  # labgrid's host/user of the holder
    acquired_since: str | None = None
    host: str | None = None  # the exporter of its serial port
class Verbosable(BaseModel):
    """A result whose call may ask for every field (``verbose``)."""

    _verbose: bool = PrivateAttr(default=False)

    @property
    def is_verbose(self) -> bool:
        return self._verbose

    def set_verbose(self, on: bool) -> None:
        self._verbose = on


class Port(BaseModel):
    name: str
    description: str | None = None
    vid: str | None = None
    pid: str | None = None
    serial_number: str | None = None
    manufacturer: str | None = None
    product: str | None = None
    interface: str | None = None
    location: str | None = None
    transport: str
    open_as: str | None = None
    kind: str | None = None  # "labgrid" for a lab place (issue 25); None for a local port
    lab: LabPlace | None = None


class ListPortsResult(BaseModel):
    ports: list[Port]
    profile_matches: list[dict[str, Any]] = []
    lab_error: str | None = None  # the labgrid coordinator could not be asked (issue 25)

    def summary(self) -> str:
        names = ", ".join(
            p.name
            + (f" ({p.description})" if p.description else "")
            + (f" open as {p.open_as}" if p.open_as else "")
            for p in self.ports
        )
        shown = messages.S_PORTS.format(n=len(self.ports), names=names or "-")
        return shown + (messages.S_LAB_ERROR.format(error=self.lab_error) if self.lab_error else "")


class ConnectionSummary(BaseModel):
    connection_id: str
    port: str
    state: str
    baud_rate: int
    rx_bytes: int
    tx_bytes: int


class ListConnectionsResult(BaseModel):
    connections: list[ConnectionSummary]

    def summary(self) -> str:
        items = ", ".join(f"{c.connection_id} {c.port} {c.state}" for c in self.connections)
        return messages.S_CONNECTIONS.format(n=len(self.connections), items=items or "-")


class OpenResult(BaseModel):
    connection_id: str
    port: str
    state: str
    baud_rate: int
    settings: dict[str, Any]
    rx_buffer_size: int
    profile: str | None = None
    profile_action: str | None = None
    mirror: str | None = None
    mirror_url: str | None = None  # rfc2217://127.0.0.1:PORT when open(mirror="rfc2217")
    protocol: str | None = None  # the preset the connection's reads and writes use by default
    responders: list[dict[str, Any]] | None = None  # issue 26: the standing rules armed at open

    def summary(self) -> str:
        prof = (
            messages.S_OPEN_PROFILE.format(name=self.profile, action=self.profile_action)
            if self.profile
            else ""
        )
        proto = messages.S_OPEN_PROTOCOL.format(protocol=self.protocol) if self.protocol else ""
        url = messages.S_RFC2217_MIRROR.format(url=self.mirror_url) if self.mirror_url else ""
        rules = (
            messages.S_OPEN_RULES.format(
                rules=", ".join(f"{r['on']!r} x{r['times']}" for r in self.responders)
            )
            if self.responders
            else ""
        )
        return (
            messages.S_OPEN.format(id=self.connection_id, port=self.port, baud=self.baud_rate)
            + proto
            + prof
            + url
            + rules
        )


class CloseResult(BaseModel):
    connection_id: str
    port: str
    rx_bytes: int
    tx_bytes: int

    def summary(self) -> str:
        return messages.S_CLOSE.format(
            id=self.connection_id, port=self.port, rx=self.rx_bytes, tx=self.tx_bytes
        )


class CursorStatus(BaseModel):
    offset: int
    unread: int
    lost: int


class StatusResult(BaseModel):
    connection_id: str
    port: str
    state: str
    settings: dict[str, Any]
    rx_bytes: int
    tx_bytes: int
    start_offset: int
    end_offset: int
    rx_buffer_size: int
    cursors: dict[str, CursorStatus]
    bytes_lost_total: int
    bytes_evicted: int
    cts: bool | None = None
    dsr: bool | None = None
    ri: bool | None = None
    cd: bool | None = None
    dtr: bool | None = None
    rts: bool | None = None
    reconnect_attempts: int = 0
    reconnects: int = 0
    reconnect: dict[str, Any] | None = None
    low_latency: bool | None = None
    defaults: dict[str, Any] = {}
    last_error: str | None = None
    opened_at: str
    # armed respond rules: {on, sent, times, standing}, and failed (answers dropped) when any were
    responders: list[dict[str, Any]] | None = None
    replay: dict[str, Any] | None = None  # replay:// progress; "finished": true once the capture ended
    owner: str | None = None  # "you", "another session", or "nobody" (its session ended; anyone may close it)
    share: str | None = None
    lend: dict[str, Any] | None = None  # while released: watching, borrowers_seen, reclaim_in_ms
    follows: str | None = None  # the USB device reopens look for, whatever node it gets
    events: dict[str, Any] | None = None  # issue 24: boots, crashes, resets, boot_loops, last, elf
    # the RFC 2217 mirror: url, client (attached now), read_only, forwarded/dropped counts
    rfc2217: dict[str, Any] | None = None

    def summary(self) -> str:
        answered = sum(int(r.get("sent", 0)) for r in self.responders or [])
        dropped = sum(int(r.get("failed", 0)) for r in self.responders or [])
        extra = messages.S_STATUS_RESPONDED.format(n=answered) if answered else ""
        extra += messages.S_STATUS_RESPOND_FAILED.format(n=dropped) if dropped else ""
        lent = (self.rfc2217 or {}).get("client") if not (self.rfc2217 or {}).get("read_only") else None
        extra += messages.S_STATUS_LENT.format(client=lent) if lent else ""
        return (
            messages.S_STATUS.format(
                id=self.connection_id,
                port=self.port,
                state=self.state,
                rx=self.rx_bytes,
                tx=self.tx_bytes,
                unread=self.cursors["default"].unread if "default" in self.cursors else 0,
                lost=self.bytes_lost_total,
                error=f", last error: {self.last_error}" if self.last_error else "",
            )
            + extra
            + events_status(self.events)
            + _cursor_lost(self)
        )


def _cursor_lost(status: StatusResult) -> str:
    cursor = status.cursors.get("default")
    if cursor is None or not cursor.lost:
        return ""
    return messages.S_STATUS_CURSOR_LOST.format(n=cursor.lost, evicted=status.bytes_evicted)


class Frame(BaseModel):
    index: int = 0
    data: str
    encoding: str = "utf8"
    offset: int
    t: float | None = None
    parsed: dict[str, Any] | None = None
    checksum_valid: bool | None = None

    def line(self, view: str = "both") -> str:
        """One frame for the one-line text: its kind (and message type) and checksum verdict first,
        so a model reading only text can tell good frames from bad; then what the parser understood
        (``fix=3D lat=… sv=11``, ``registers=[…]``), else the raw frame; with frames=parsed, the
        parsed fields as JSON."""
        kind = frame_values.label_of(self.parsed)
        verdict = {True: " ok", False: " BAD", None: ""}[self.checksum_valid]
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


class ReadResult(Verbosable):
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

    @model_validator(mode="after")
    def _derived(self) -> ReadResult:
        """What a lean result leaves out because it follows from what it keeps (see
        ``lean_read``): a match index means matched, and a byte match's offset is the read's
        start plus its index."""
        for i, frame in enumerate(self.frames or []):
            frame.index = i  # a frame's index is its place in the list
        if self.match_index is not None:
            self.matched = True
            if self.frames is None and self.match_offset is None:
                self.match_offset = self.from_offset + self.match_index
        return self

    def summary(self) -> str:
        return text_lines(self.events) + self._text() + "".join(
            messages.S_STANDING_ANSWERED.format(on=a["on"], offset=a["offset"]) for a in self.answered or []
        )

    def _text(self) -> str:
        lost = messages.S_LOST.format(n=self.bytes_lost) if self.bytes_lost else ""
        if self.counts is not None:
            return summary_text.summary_line(
                self.counts, self.from_offset, self.next_offset, self.stop_reason, lost
            )
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


def events_status(events: dict[str, Any] | None) -> str:
    """get_status's text about detected events (nothing when there were none)."""
    if not events:
        return ""
    text = ""
    if events.get("boots") or events.get("crashes"):
        last = events.get("last")
        text = messages.S_EVENTS_STATUS.format(
            boots=events.get("boots", 0),
            crashes=events.get("crashes", 0),
            last=messages.S_EVENTS_STATUS_LAST.format(
                kind=str(last["kind"]).replace("_", " "), offset=last["offset"], line=last["text"]
            )
            if last
            else "",
        )
    if events.get("bytes_not_scanned"):
        text += messages.S_EVENTS_NOT_SCANNED.format(n=events["bytes_not_scanned"])
    return text
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

    def summary(self) -> str:
        text = messages.S_WRITE.format(n=self.bytes_written, id=self.connection_id)
        if self.stop_reason == "stalled":
            return text + messages.S_WRITE_STALLED
        return text + messages.S_WRITE_TIMED_OUT if self.stop_reason == "timeout" else text


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


class TransactResult(Verbosable):
    write: WriteResult
    read: ReadResult  # with steps, the last step's: a lean result leaves it out there (not repeated)
    mark_offset: int = -1  # a lean result leaves it out when the read starts there (the usual case)
    steps: list[StepResult] | None = None  # a dialog: each step's own result, in order
    steps_ok: bool | None = None
    events: list[dict[str, Any]] | None = None  # issue 24: as ReadResult.events

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
        return text_lines(self.events) + self._summary()

    def _summary(self) -> str:
        if self.steps is not None:
            ok = sum(1 for s in self.steps if s.ok)
            head = messages.S_STEPS.format(ok=ok, n=len(self.steps))
            return f"{head}; " + " | ".join(
                f"{s.step}: "
                + (
                    _mpy_text(s.stdout, s.stderr)
                    if s.stdout is not None
                    else s.read.summary()
                )
                for s in self.steps
            )
        return f"{self.write.summary()}; {self.read.summary()}"


class FlushResult(BaseModel):
    connection_id: str
    target: str
    bytes_discarded: int

    def summary(self) -> str:
        return messages.S_FLUSH.format(id=self.connection_id, target=self.target, n=self.bytes_discarded)


class CaptureBootResult(Verbosable):
    mark_offset: int
    read: ReadResult
    bytes_before_mark: int = 0  # unread bytes that arrived before the mark: read(from="buffer_start")
    events: list[dict[str, Any]] | None = None  # issue 24: as ReadResult.events

    def summary(self) -> str:
        return text_lines(self.events) + self._summary()

    def _summary(self) -> str:
        before = messages.S_BEFORE_MARK.format(n=self.bytes_before_mark) if self.bytes_before_mark else ""
        return messages.S_CAPTURE.format(mark=self.mark_offset, read=self.read.summary()) + before


class LinesResult(BaseModel):
    connection_id: str
    dtr: bool | None = None
    rts: bool | None = None

    def summary(self) -> str:
        return messages.S_LINES.format(id=self.connection_id, dtr=self.dtr, rts=self.rts)


class BreakResult(BaseModel):
    connection_id: str
    duration_ms: int

    def summary(self) -> str:
        return messages.S_BREAK.format(id=self.connection_id, ms=self.duration_ms)


class ReconfigureResult(BaseModel):
    connection_id: str
    settings: dict[str, Any]
    previous: dict[str, Any]
    profile_persistence: str = "not_needed"

    def summary(self) -> str:
        changed = {k: v for k, v in self.settings.items() if self.previous.get(k) != v}
        return messages.S_RECONFIGURE.format(
            id=self.connection_id, changed=json.dumps(changed) if changed else "nothing"
        )


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


class ReconnectResult(BaseModel):
    connection_id: str
    state: str
    reconnect_attempts: int
    end_offset: int

    def summary(self) -> str:
        return messages.S_RECONNECT.format(id=self.connection_id, state=self.state, offset=self.end_offset)


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
        return text + messages.S_LOG_TRUNCATED.format(since=self.next_since) if self.truncated else text


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

    def summary(self) -> str:
        if self.path is None:
            return messages.S_NOT_RECORDING.format(id=self.connection_id)
        state = "recording" if self.recording else f"stopped ({self.stopped_reason or 'stopped'})"
        return messages.S_RECORD.format(
            id=self.connection_id,
            state=state,
            path=self.absolute_path or self.path,
            n=self.events_written,
            b=self.bytes_written,
        ) + messages.S_RECORD_REPLAY.format(name=self.path)


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


class ProfileResult(BaseModel):
    profile: dict[str, Any] | None = None
    revision: int | None = None
    profile_persistence: str | None = None
    mirror_url: str | None = None  # configure(defaults={"mirror": "rfc2217"}) on a connection

    def summary(self) -> str:
        name = (self.profile or {}).get("name", "-")
        extra = f", {self.profile_persistence}" if self.profile_persistence else ""
        url = messages.S_RFC2217_MIRROR.format(url=self.mirror_url) if self.mirror_url else ""
        return messages.S_PROFILE.format(name=name, rev=self.revision, extra=extra) + url


class ProfilesResult(BaseModel):
    profiles: list[dict[str, Any]]

    def summary(self) -> str:
        return messages.S_PROFILES.format(
            n=len(self.profiles), names=", ".join(p["name"] for p in self.profiles) or "-"
        )


def open_result(conn: Any, profile: str | None, action: str) -> OpenResult:
    return OpenResult(
        connection_id=conn.id,
        port=conn.port,
        state=conn.state,
        baud_rate=conn.settings.baud_rate,
        settings=conn.settings.as_dict(),
        rx_buffer_size=conn.rx_buffer_size,
        profile=profile,
        profile_action=action,
        mirror=conn.mirror.path if conn.mirror is not None else None,
        mirror_url=conn.rfc2217.url if conn.rfc2217 is not None else None,
        protocol=conn.options.protocol,
        responders=[r.status() for r in conn.responders if getattr(r, "standing", False)] or None,
    )


class BaudResult(BaseModel):
    connection_id: str
    best: int | None = None
    conclusive: bool
    reason: str
    ranked: list[dict[str, Any]]
    restored_baud_rate: int

    def summary(self) -> str:
        top = ", ".join(f"{r['baud_rate']}:{r['score']}" for r in self.ranked[:4])
        verdict = str(self.best) if self.conclusive else "inconclusive"
        return messages.S_BAUD.format(id=self.connection_id, verdict=verdict, reason=self.reason, top=top)


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
