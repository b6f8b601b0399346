"""One self-contained HTML page from the view data: header in HTML, the rest drawn by inline JS.

The page's CSS and script are this package's ``assets/`` (``view.css``, the parts of the script in
``js/``; plain, hand-written, no third-party code), inlined at render time; the data is one JSON
document in a ``<script type="application/json">`` element, with every ``<`` escaped so no
capture content can end the element. A strict
Content-Security-Policy (no network, inline only) makes "opens offline" a property of the page.
"""

from __future__ import annotations

import html
import json
import re
from importlib import resources
from typing import Any, Final

from serial_mcp import __version__, messages

_SLOT: Final = re.compile(r"@(GENERATOR|TITLE|HEADER|CSS|JS|DATA)@")


def _asset(name: str) -> str:
    return resources.files("serial_mcp.view").joinpath("assets", name).read_text(encoding="utf-8")


def _script() -> str:
    """The parts in ``assets/js/`` in name order, one after the other (one function scope)."""
    folder = resources.files("serial_mcp.view").joinpath("assets", "js")
    parts = sorted((p for p in folder.iterdir() if p.name.endswith(".js")), key=lambda p: p.name)
    return "\n".join(p.read_text(encoding="utf-8") for p in parts)


def _size(n: int) -> str:
    for unit, scale in (("MB", 1_000_000), ("kB", 1000)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _settings(s: dict[str, Any] | None) -> str | None:
    if not s:
        return None
    frame = f"{s.get('bytesize', '?')}{s.get('parity', '?')}{s.get('stopbits', '?')}"
    text = f"{s.get('baudrate', '?')} {frame}"
    if s.get("flow_control") not in (None, "none"):
        text += f", flow {s['flow_control']}"
    return text


def _warn(text: str) -> str:
    return f'<span class="warn">{html.escape(text)}</span>'


def _header(data: dict[str, Any]) -> str:
    m = data["meta"]
    frames = data.get("frames")
    device = m.get("device") or {}
    items: list[tuple[str, str | None]] = [
        ("port", m.get("port")),
        ("settings", _settings(m.get("settings"))),
        ("device", " ".join(str(v) for v in device.values()) or None),
        ("created", m.get("created")),
        ("duration", f"{m['duration']:.3f} s"),
        ("RX", f"{m['rx_bytes']} bytes"),
        ("TX", f"{m['tx_bytes']} bytes"),
        ("events", str(len(data["timeline"]["t"]))),
        ("markers", str(len(data["timeline"]["markers"]))),
        ("lost", f"{m['lost_bytes']} bytes" if m["lost_bytes"] else "none"),
        ("recorded by", m.get("source")),
        ("protocol", m.get("protocol") or (json.dumps(m["rx_parser"]) if m.get("rx_parser") else None)),
        ("frames", f"{len(frames['t'])} ({frames['bad']} bad)" if frames else None),
        ("file", f"{m['file']} ({_size(m['file_bytes'])})"),
        ("viewer", m["viewer"]),
    ]
    parts = [f"<h1>{html.escape(m['file'])}</h1>", "<dl>"]
    for key, value in items:
        if value is not None:
            parts.append(
                f'<div data-key="{html.escape(key)}"><dt>{html.escape(key)}</dt>'
                f"<dd>{html.escape(str(value))}</dd></div>"
            )
    parts.append("</dl>")
    notes = []
    if m.get("note"):
        notes.append(html.escape(m["note"]))
    if m.get("skipped_unknown"):
        kinds = ", ".join(f"{k} ×{n}" for k, n in m["unknown_types"].items())
        notes.append(_warn(messages.VIEW_NOTE_SKIPPED.format(n=m["skipped_unknown"], kinds=kinds)))
    if m.get("torn_tail"):
        notes.append(_warn(messages.VIEW_NOTE_TORN))
    if m["lost_bytes"]:
        notes.append(_warn(messages.VIEW_NOTE_LOST.format(n=m["lost_bytes"])))
    if m.get("values_not_finite"):
        notes.append(_warn(messages.VIEW_NOTE_NOT_FINITE.format(n=m["values_not_finite"])))
    parts.extend(f'<p class="note">{n}</p>' for n in notes)
    return "\n".join(parts)


def _json_for_script(data: dict[str, Any]) -> str:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def render_page(data: dict[str, Any]) -> str:
    """The whole HTML document for ``data`` (as built by ``view.model.build_view``)."""
    slots = {
        "GENERATOR": html.escape(f"serial-mcp {__version__} view"),
        "TITLE": html.escape(f"{data['meta']['file']} · serial-mcp view"),
        "HEADER": _header(data),
        "CSS": _asset("view.css"),
        "JS": _script(),
        "DATA": _json_for_script(data),
    }
    return _SLOT.sub(lambda m: slots[m.group(1)], _asset("page.html"))
