"""``identify``'s result: one answer per port, and the text an agent reads (a line a port, kind first)."""

from __future__ import annotations

import json

from pydantic import BaseModel

from serial_mcp import messages
from serial_mcp.core.outside_text import clean
from serial_mcp.core.port_info import PortInfo

MAX_LINE = 300  # bytes of text per port, at most


class PortAnswer(BaseModel):
    # What is on one port: ``kind`` with its ``confidence`` and the ``evidence`` that decided it; or,
    # when the port could not be opened, ``error`` (a stable code) with ``evidence`` saying why.

    port: str
    kind: str | None = None
    confidence: str | None = None
    evidence: str = ""
    baud_rate: int | None = None
    open: dict[str, object] | None = None  # the `open` arguments to talk to it
    prompt: str | None = None
    sent: list[str] | None = None  # every byte written, per poke, escaped
    connection_id: str | None = None
    held: str | None = None
    usb: str | None = None
    resets_on_open: bool = False
    lines_kept: bool | None = None  # HUPCL cleared: closing will not drop DTR (no second reset)
    competing: list[str] | None = None  # other programs holding the port (ModemManager …)
    error: str | None = None
    note: str | None = None

    def line(self) -> str:
        if self.error is not None:
            text = messages.S_IDENTIFY_ERROR.format(port=self.port, code=self.error, why=self.evidence)
            return _capped(text + self._extras())
        head = messages.S_IDENTIFY.format(
            port=self.port,
            kind=self.kind,
            confidence=self.confidence,
            baud=f" {self.baud_rate}" if self.baud_rate else "",
            evidence=json.dumps(self.evidence, ensure_ascii=False),
        )
        parts = [head]
        if self.open is not None and self.held:  # already open, at these settings: ask it by port
            asked = {k: v for k, v in self.open.items() if k in ("port", "protocol")}
            parts.append(messages.S_IDENTIFY_ASK.format(args=_args(asked)))
        elif self.open is not None:
            parts.append(messages.S_IDENTIFY_OPEN.format(args=_args(self.open)))
        if self.prompt:
            parts.append(messages.S_IDENTIFY_PROMPT.format(prompt=json.dumps(self.prompt)))
        return _capped("; ".join(parts) + self._extras())

    def _extras(self) -> str:
        bits = []
        if self.sent:
            bits.append(messages.S_IDENTIFY_SENT.format(sent=" ".join(self.sent)))
        if self.note:
            bits.append(self.note)
        if self.resets_on_open:
            bits.append(messages.S_IDENTIFY_RESETS_KEPT if self.lines_kept else messages.S_IDENTIFY_RESETS)
        if self.competing:
            bits.append(messages.S_IDENTIFY_COMPETING.format(names=", ".join(self.competing)))
        if self.usb:
            bits.append(f"usb {self.usb}")
        if self.connection_id:  # what "held" means is said once, under the lines
            held = messages.S_IDENTIFY_HELD.format(id=self.connection_id)
            bits.append(held if self.held else messages.S_IDENTIFY_CONN.format(id=self.connection_id))
        return "".join(f"; {b}" for b in bits)


class IdentifyResult(BaseModel):
    ports: list[PortAnswer]
    probe: bool
    none_found: bool = False

    def summary(self) -> str:
        if self.none_found:
            return messages.S_IDENTIFY_NONE
        lines = [a.line() for a in self.ports]
        held = next((a.held for a in self.ports if a.held), None)
        if held is not None:
            lines.append(held.split(" ", 1)[-1])  # "held: closes after 60 s idle; open(port) adopts it"
        if not self.probe and any(a.kind in ("silent", "unknown") for a in self.ports):
            lines.append(messages.S_IDENTIFY_PROBE_HINT)
        return "\n".join(lines)


def usb_identity(info: PortInfo | None) -> str | None:
    """``vid:pid maker product`` of a USB port, short; None for any other."""
    if info is None or not info.vid:
        return None
    words = " ".join(w for w in (info.manufacturer, info.product) if w)
    return clean(f"{info.vid}:{info.pid or '?'} {words}".strip(), 48)


def _args(given: dict[str, object]) -> str:
    return ", ".join(f"{k}={json.dumps(v)}" for k, v in given.items())


def _capped(text: str) -> str:
    raw = text.encode()
    if len(raw) <= MAX_LINE:
        return text
    return raw[: MAX_LINE - 3].decode(errors="ignore") + "…"
