"""The timeline of a capture: data events as compact columns, markers, and the silent gaps (sans-IO).

Data events (rx/tx chunks) become parallel arrays (time, direction, byte count, stream position),
so a 50 MB capture's hundreds of thousands of chunks cost a few bytes each in the page, where the
script aggregates them per pixel column. Everything else that happened on the line becomes a
marker: DTR/RTS and BREAK, reconfigure, responder answers (tx with ``respond: true``), opens,
closes, errors and reconnects, lost bytes, and the free-text markers. A marker is ``[t, kind, label]``;
a detected crash whose addresses were decoded (against ``--elf``, or live when it was recorded) has a fourth
item, its frames as lines (``0x400d1234 app_main at main.c:42``), which its mark's detail shows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from serial_mcp.core.capture import CaptureEvent
from serial_mcp.core.events import EventDetector

if TYPE_CHECKING:
    from serial_mcp.serial.event_text import Frames
    from serial_mcp.serial.firmware_elf import LoadedElf

MARKER_KINDS: Final = (
    "control",
    "break",
    "config",
    "respond",
    "open",
    "close",
    "error",
    "reconnect",
    "lost",
    "marker",
    "boot",
    "reset",
    "crash",
    "boot_loop",
)
_DETECTED: Final = frozenset({"boot", "reset", "crash", "boot_loop"})
_RECONNECT_WORDS: Final = ("reconnect", "disconnect", "unplug", "replug")


@dataclass(slots=True)
class Timeline:
    """Columns of the data events, the markers (``[t, kind, label]``) and gaps (``[start, end]``)."""

    t: list[float] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)  # "r" or "t" per event
    sizes: list[int] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)  # byte position in its direction's stream
    markers: list[list[Any]] = field(default_factory=list)
    gaps: list[list[float]] = field(default_factory=list)
    rx_bytes: int = 0
    tx_bytes: int = 0
    lost_bytes: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "t": self.t,
            "dir": "".join(self.dirs),
            "n": self.sizes,
            "pos": self.positions,
            "markers": self.markers,
            "gaps": self.gaps,
        }


def _settings_text(settings: object) -> str:
    if not isinstance(settings, dict):
        return ""
    return " ".join(f"{k}={v}" for k, v in settings.items())


def marker_of(event: CaptureEvent) -> tuple[str, str] | None:
    """(kind, label) of a non-data event, or of a responder's tx; None for ordinary rx/tx."""
    f = event.fields
    kind = event.type
    if kind in ("rx", "tx"):
        return ("respond", "responder answered") if kind == "tx" and f.get("respond") is True else None
    if kind == "control":
        lines = [f"{name.upper()}={int(bool(f[name]))}" for name in ("dtr", "rts") if name in f]
        return "control", " ".join(lines) or "line control"
    if kind == "break":
        ms = f.get("duration_ms")
        return "break", f"BREAK {ms:g} ms" if isinstance(ms, int | float) else "BREAK"
    if kind == "config":
        return "config", ("reconfigure " + _settings_text(f.get("settings"))).strip()
    if kind == "lost":
        return "lost", f"lost {f.get('bytes', '?')} bytes"
    if kind == "error":
        return "error", str(f.get("message") or "error")
    if kind in ("open", "close"):
        port = f.get("port")
        return kind, f"{kind} {port}" if isinstance(port, str) else kind
    label = str(f.get("label") or kind)
    detected = f.get("event")
    if kind == "marker" and isinstance(detected, dict):  # a detected boot, reset or crash (issue 24)
        what = detected.get("kind")
        if what in ("boot", "reset", "crash", "boot_loop"):
            return str(what), label
        return "marker", label
    if label == "reconnect" and isinstance(f.get("attempts"), int):  # as the connection records it
        return "reconnect", f"reconnected after {f['attempts']} attempt(s)"
    if any(word in label.lower() for word in _RECONNECT_WORDS):
        return "reconnect", label
    return "marker", label


def frame_lines(frames: Frames) -> list[str]:
    """Decoded addresses as the lines of a mark's detail: ``0x…`` and each of its frames, innermost first."""
    return [f"0x{address:08x} {frame}" for address, found in frames for frame in found]


def _recorded_frames(detected: dict[str, Any], elf: LoadedElf | None) -> list[str]:
    """The frame lines of an event a connection recorded: the frames it decoded then, else its addresses
    decoded now against ``elf``."""
    frames = detected.get("frames")
    if isinstance(frames, dict):
        return [f"{a} {f}" for a, found in frames.items() if isinstance(found, list) for f in found]
    if elf is None:
        return []
    texts = [detected.get("pc"), *(detected.get("backtrace") or [])]
    addresses = [int(a, 16) for a in texts if isinstance(a, str) and a.startswith("0x")]
    return frame_lines(elf.decode(addresses)) if addresses else []


def _marker(t: float, kind: str, label: str, frames: list[str]) -> list[Any]:
    return [round(t, 6), kind, label, frames] if frames else [round(t, 6), kind, label]


def detected_markers(events: Iterable[CaptureEvent], elf: LoadedElf | None = None) -> list[list[Any]]:
    """Boots, resets, crashes and boot loops found in the capture's received bytes, as a connection finds
    them (for a capture recorded without them: an older one, a file from elsewhere), as markers; with
    ``elf``, their addresses decoded as a connection decodes them."""
    detector = EventDetector()
    found = []
    offset = 0
    for e in events:
        if e.type == "rx" and e.data:
            found += detector.feed(e.data, e.offset if e.offset is not None else offset, e.t)
            offset = (e.offset if e.offset is not None else offset) + len(e.data)
    found += detector.flush()
    shown = [ev for ev in found if ev.kind != "stage"]
    return [
        _marker(ev.t, ev.kind, ev.summary()[:200], frame_lines(elf.decode_event(ev)) if elf else [])
        for ev in shown
    ]


def build_timeline(events: Iterable[CaptureEvent], gap_s: float, elf: LoadedElf | None = None) -> Timeline:
    """One pass over the events: columns, markers, and gaps of silence longer than ``gap_s``. A capture
    that holds no detected boots, resets or crashes gets them from :func:`detected_markers`; ``elf``
    (``--elf``) decodes the addresses of the events its markers show."""
    events = list(events)
    tl = Timeline()
    last_data_t: float | None = None
    for e in events:
        marker = marker_of(e)
        if marker is not None:
            detected = e.fields.get("event") if marker[0] in _DETECTED else None
            frames = _recorded_frames(detected, elf) if isinstance(detected, dict) else []
            tl.markers.append(_marker(e.t, marker[0], marker[1], frames))
        if e.type == "lost":
            lost = e.fields.get("bytes")
            tl.lost_bytes += lost if isinstance(lost, int) else 0
        if e.data is None or e.type not in ("rx", "tx"):
            continue
        if last_data_t is not None and e.t - last_data_t > gap_s:
            tl.gaps.append([round(last_data_t, 6), round(e.t, 6)])
        last_data_t = e.t
        n = len(e.data)
        tl.t.append(round(e.t, 6))
        if e.type == "rx":
            tl.dirs.append("r")
            tl.positions.append(tl.rx_bytes)
            tl.rx_bytes += n
        else:
            tl.dirs.append("t")
            tl.positions.append(tl.tx_bytes)
            tl.tx_bytes += n
        tl.sizes.append(n)
    if not any(m[1] in _DETECTED for m in tl.markers):
        tl.markers = sorted(tl.markers + detected_markers(events, elf), key=lambda m: float(m[0]))
    return tl
