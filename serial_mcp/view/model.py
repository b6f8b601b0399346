"""The data behind a capture's HTML view, built from the capture's bytes (sans-IO).

Parsing is ``core/capture.py``'s (the reader every tool uses), decoding is ``decode``'s (see
``view/frames.py``). A file that is not a capture (no ``serial-mcp-capture`` header on line 1) is
viewed as ``decode`` reads it: all its bytes as one rx chunk at t=0. The result is one JSON-ready
dict the page's script renders; nothing here knows about HTML.

A number no float holds is a missing value wherever it comes from (a plotted field, the header's
``settings`` or ``device``): ``null`` in the data, counted in ``meta.values_not_finite``, so a
hostile capture cannot stop the page (the page's JSON allows no ``NaN`` or ``Infinity``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from serial_mcp import __version__, messages
from serial_mcp.core.capture import Capture, CaptureEvent, CaptureHeader, decode_lines, parse_capture
from serial_mcp.core.offline_decode import with_print_filter
from serial_mcp.view.frames import FrameTable, decode_frames, resolve_settings
from serial_mcp.view.series import choose_series, extract_series, finite
from serial_mcp.view.timeline import build_timeline
from serial_mcp.view.transcript import build_rows

if TYPE_CHECKING:
    from serial_mcp.serial.firmware_elf import LoadedElf

Progress = Callable[[str], None]
DEFAULT_GAP_S: Final = 1.0
_PROGRESS_LINES: Final = 50_000
_RAW_CREATED: Final = "1970-01-01T00:00:00.000000Z"


@dataclass(frozen=True, slots=True)
class ViewOptions:
    """What to decode and plot; the same protocol options as ``serial-mcp decode``."""

    protocol: str | None = None
    rx_framing: Any = None
    rx_parser: Any = None
    fields: Sequence[str] | None = None
    gap_s: float = DEFAULT_GAP_S
    print_filter: str | None = None  # decode's --print-filter: the esp_log parser, hidden lines counted

    @property
    def decodes(self) -> bool:
        return any(v is not None for v in (self.protocol, self.rx_framing, self.rx_parser, self.print_filter))


def _quiet(_: str) -> None:
    pass


def _counted(lines: list[str], progress: Progress) -> Iterator[str]:
    total = len(lines)
    for number, line in enumerate(lines, start=1):
        if number % _PROGRESS_LINES == 0:
            progress(messages.VIEW_PROGRESS_PARSED.format(n=number, total=total))
        yield line


def load_capture(raw: bytes, progress: Progress = _quiet) -> tuple[Capture, bool]:
    """(capture, is_raw): a capture file parsed strictly (a torn last line tolerated), or any
    other file as one rx chunk at t=0, as ``decode`` treats it."""
    first = raw.split(b"\n", 1)[0]
    if b'"serial-mcp-capture"' not in first:
        header = CaptureHeader(created=_RAW_CREATED, note=messages.VIEW_RAW_NOTE)
        return Capture(header, [CaptureEvent(0.0, "rx", raw, 0)] if raw else []), True
    lines = decode_lines(raw)
    return parse_capture(_counted(lines, progress), torn_tail_ok=True), False


def finite_json(value: Any) -> tuple[Any, int]:
    """(a copy of JSON data with every number no float holds as None, how many there were)."""
    if isinstance(value, bool) or not isinstance(value, int | float | dict | list):
        return value, 0
    if isinstance(value, int | float):
        return (value, 0) if finite(value) is not None else (None, 1)
    count = 0
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out[key], n = finite_json(item)
            count += n
        return out, count
    items = []
    for item in value:
        clean, n = finite_json(item)
        items.append(clean)
        count += n
    return items, count


def _meta(capture: Capture, name: str, size: int, is_raw: bool, options: ViewOptions) -> dict[str, Any]:
    h = capture.header
    settings, bad_settings = finite_json(h.settings)
    device, bad_device = finite_json(h.device)
    return {
        "file": name,
        "file_bytes": size,
        "raw_input": is_raw,
        "created": None if is_raw else h.created,
        "port": h.port,
        "settings": settings,
        "device": device,
        "source": h.source,
        "note": h.note,
        "duration": round(capture.duration, 6),
        "skipped_unknown": capture.skipped_unknown,
        "unknown_types": capture.unknown_types,
        "torn_tail": capture.torn_tail,
        "viewer": f"serial-mcp {__version__}",
        "protocol": options.protocol,
        "gap_s": options.gap_s,
        "values_not_finite": bad_settings + bad_device,
    }


def build_view(
    raw: bytes, name: str, options: ViewOptions, progress: Progress = _quiet, elf: LoadedElf | None = None
) -> dict[str, Any]:
    """Everything the page shows: ``meta``, ``timeline``, ``rows``, ``frames`` and ``series``; ``elf``
    (``--elf``, loaded by the caller) decodes the addresses of the crashes the timeline marks."""
    capture, is_raw = load_capture(raw, progress)
    progress(messages.VIEW_PROGRESS_EVENTS.format(n=len(capture.events)))
    meta = _meta(capture, name, len(raw), is_raw, options)
    timeline = build_timeline(capture.events, options.gap_s, elf)
    meta.update(rx_bytes=timeline.rx_bytes, tx_bytes=timeline.tx_bytes, lost_bytes=timeline.lost_bytes)
    rows = build_rows(capture.events, options.gap_s)
    progress(messages.VIEW_PROGRESS_ROWS.format(n=len(rows)))
    frames: FrameTable | None = None
    plotted: list[dict[str, Any]] = []
    if options.decodes:
        rx_framing, rx_parser = resolve_settings(options.protocol, options.rx_framing, options.rx_parser)
        if options.print_filter is not None:
            rx_parser = with_print_filter(rx_parser, options.print_filter)
            meta["print_filter"] = options.print_filter
        meta.update(rx_framing=rx_framing, rx_parser=rx_parser)
        if rx_framing is not None or rx_parser is not None:
            frames = decode_frames(capture.events, rx_framing, rx_parser)
            progress(messages.VIEW_PROGRESS_FRAMES.format(n=len(frames), bad=frames.bad))
            found, not_finite = extract_series(frames.parsed)
            meta["values_not_finite"] += not_finite
            chosen, missing = choose_series(found, options.fields)
            plotted = [s.as_json() for s in chosen]
            meta.update(series_available=sorted(found), fields_missing=missing)
    return {
        "meta": meta,
        "timeline": timeline.as_json(),
        "rows": rows,
        "frames": frames.as_json() if frames is not None else None,
        "series": plotted,
    }
