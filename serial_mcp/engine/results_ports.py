"""Typed results of the port and connection tools: list_ports, open, close, list_connections,
get_status, reconnect, the line and settings tools (set_dtr_rts, send_break, reconfigure,
detect_baud) and the profiles. Field names are part of the contract in TOOLS.md.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from serial_mcp import messages
from serial_mcp.core.outside_text import quoted


class LabPlace(BaseModel):
    """A labgrid place as ``list_ports`` shows it (issue 25)."""

    tags: dict[str, str] = {}
    comment: str = ""
    acquired_by: str | None = None  # labgrid's host/user of the holder
    acquired_since: str | None = None
    host: str | None = None  # the exporter of its serial port


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
            + (f" (description {quoted(p.description)})" if p.description else "")  # the device names it
            + (f" open as {p.open_as}" if p.open_as else "")
            for p in self.ports
        )
        shown = messages.S_PORTS.format(n=len(self.ports), names=names or "-") + messages.S_PORTS_UNSEEN
        return shown + (messages.S_LAB_ERROR.format(error=self.lab_error) if self.lab_error else "")


class ConnectionSummary(BaseModel):
    connection_id: str
    port: str
    state: str
    baud_rate: int
    rx_bytes: int
    tx_bytes: int
    held: str | None = None  # issue 39: opened by a call on its port; closes when idle unless adopted


class ListConnectionsResult(BaseModel):
    connections: list[ConnectionSummary]

    def summary(self) -> str:
        items = ", ".join(
            f"{c.connection_id} {c.port} {c.state}" + (" (held)" if c.held else "") for c in self.connections
        )
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
    hint: str | None = None  # issue 37: which mirror esptool needs on an ESP32 (or a likely one)

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
            + (messages.S_OPEN_HINT.format(hint=self.hint) if self.hint else "")
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
    settings: dict[str, Any]  # the port's settings now (a mirror client's while it has changed them)
    # who set ``settings`` when they are not the connection's own (an RFC 2217 client, a lend's borrower)
    settings_by: str | None = None
    own_settings: dict[str, Any] | None = None  # then: the connection's own, put back when it leaves
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
    # issue 36.8: TIOCEXCL held (other programs get "busy"); who opened the node anyway (root):
    # pid, program (quoted safely), at, opens
    exclusive: bool | None = None
    held: str | None = None  # issue 39: as ConnectionSummary.held
    intruders: list[dict[str, Any]] | None = None

    def summary(self) -> str:
        answered = sum(int(r.get("sent", 0)) for r in self.responders or [])
        dropped = sum(int(r.get("failed", 0)) for r in self.responders or [])
        extra = messages.S_STATUS_RESPONDED.format(n=answered) if answered else ""
        extra += messages.S_STATUS_RESPOND_FAILED.format(n=dropped) if dropped else ""
        lent = (self.rfc2217 or {}).get("client") if not (self.rfc2217 or {}).get("read_only") else None
        extra += messages.S_STATUS_LENT.format(client=lent) if lent else ""
        extra += _settings_by(self)
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
            + (f"; {self.held}" if self.held else "")
        )


def _settings_by(status: StatusResult) -> str:
    """The port's live settings when someone else set them, and the connection's own to come back."""
    if status.settings_by is None or status.own_settings is None:
        return ""
    now, own = status.settings, status.own_settings
    if now == own:  # a lend: what the borrower set is not seen
        return messages.S_STATUS_SETTINGS_UNSEEN.format(by=status.settings_by, own=_line(own))
    return messages.S_STATUS_SETTINGS_BY.format(now=_line(now), by=status.settings_by, own=_line(own))


def _line(settings: dict[str, Any]) -> str:
    """``57600 8N1`` (and the flow control when there is one)."""
    parity = str(settings.get("parity", "none"))[:1].upper()
    flow = settings.get("flow_control")
    text = f"{settings.get('baud_rate')} {settings.get('data_bits')}{parity}{settings.get('stop_bits')}"
    return text + (f" {flow}" if flow and flow != "none" else "")


def _cursor_lost(status: StatusResult) -> str:
    cursor = status.cursors.get("default")
    if cursor is None or not cursor.lost:
        return ""
    return messages.S_STATUS_CURSOR_LOST.format(n=cursor.lost, evicted=status.bytes_evicted)


def events_status(events: dict[str, Any] | None) -> str:
    """get_status's text about detected events (nothing when there were none)."""
    if not events:
        return ""
    text = ""
    if events.get("boots") or events.get("crashes") or events.get("exceptions"):
        last = events.get("last")
        text = messages.S_EVENTS_STATUS.format(
            boots=events.get("boots", 0),
            crashes=events.get("crashes", 0),
            exceptions=messages.S_EVENTS_STATUS_EXCEPTIONS.format(n=events["exceptions"])
            if events.get("exceptions")
            else "",
            loops=messages.S_EVENTS_STATUS_LOOPS.format(n=events["boot_loops"])
            if events.get("boot_loops")
            else "",
            last=messages.S_EVENTS_STATUS_LAST.format(
                kind=str(last["kind"]).replace("_", " "), offset=last["offset"], line=last["text"]
            )
            if last
            else "",
        )
    if events.get("bytes_not_scanned"):
        lo, hi = events.get("last_not_scanned") or (0, 0)
        text += messages.S_EVENTS_NOT_SCANNED.format(n=events["bytes_not_scanned"], lo=lo, hi=hi)
    return text


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


class ReconnectResult(BaseModel):
    connection_id: str
    state: str
    reconnect_attempts: int
    end_offset: int

    def summary(self) -> str:
        return messages.S_RECONNECT.format(id=self.connection_id, state=self.state, offset=self.end_offset)


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


def open_result(conn: Any, profile: str | None, action: str, hint: str | None = None) -> OpenResult:
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
        hint=hint,
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
