"""The decoded frames of a capture, through exactly the decoders ``serial-mcp decode`` uses.

``core/presets`` resolves the settings and ``core/decode.StreamDecoder`` frames and parses, as in
``serial-mcp decode``; :func:`decode_streams` gives the same frames, times and order as
``bench_cli.decode_streams`` (a test holds them equal) but finds each frame's time by bisection,
so a capture of 100k chunks costs no more per frame than a small one. One difference, on
purpose: a parser that validates (the ``nmea0183`` and ``modbus_ascii`` presets) would drop bad
frames, and the view exists to show them, so it decodes with ``validate`` off and
marks those frames bad instead (``would_drop`` counts what ``decode`` leaves out).

Row layout (compact JSON): ``[t, dir, offset, kind, valid, data, encoding, summary]`` with
``valid`` 1, 0 or null, ``encoding`` ``u`` (UTF-8 text), ``h`` (hex) or ``e`` (a framing error,
``data`` is its message) and ``summary`` the parsed fields as ``key=value`` text.
"""

from __future__ import annotations

import bisect
import copy
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from serial_mcp.core.capture import CaptureEvent
from serial_mcp.core.decode import DecodedFrame, StreamDecoder
from serial_mcp.core.encoding import encode_output
from serial_mcp.core.framing.base import FramingError
from serial_mcp.core.presets import effective

__all__ = ["FrameTable", "decode_frames", "decode_streams", "frame_kind", "resolve_settings", "summarize"]

SUMMARY_CHARS: Final = 240
DEFAULT_FRAMING: Final = {"type": "line", "ending": "auto"}
_ALWAYS_SHOWN: Final = ("kind", "start", "text")  # in the kind column, or the frame's own text


@dataclass(slots=True)
class FrameTable:
    """Decoded frames (rows as above), their parsed fields, and the counts the page shows."""

    rows: list[list[Any]] = field(default_factory=list)
    parsed: list[tuple[float, str, dict[str, Any], bool | None]] = field(default_factory=list)
    kinds: dict[str, int] = field(default_factory=dict)
    bad: int = 0
    errors: int = 0
    would_drop: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "kinds": self.kinds,
            "bad": self.bad,
            "errors": self.errors,
            "would_drop": self.would_drop,
        }


def resolve_settings(protocol: str | None, rx_framing: Any, rx_parser: Any) -> tuple[Any, Any]:
    """(rx_framing, rx_parser) as ``decode`` resolves them (presets, ``raw``, explicit fields)."""
    resolved = effective({"protocol": protocol, "rx_framing": rx_framing, "rx_parser": rx_parser}, {})
    return resolved.rx_framing, resolved.rx_parser


def frame_kind(parsed: dict[str, Any] | None) -> str:
    """A short name to filter frames by: the NMEA sentence type, the Modbus function, the AT kind."""
    if not parsed:
        return "frame"
    if isinstance(parsed.get("sentence"), str):
        if parsed.get("talker") == "P":
            return str(parsed.get("address") or "P")
        return str(parsed["sentence"]) or str(parsed.get("address") or "sentence")
    kind = str(parsed.get("kind") or "frame")
    if kind == "modbus":
        return f"fn {parsed.get('function')}" + (" exception" if parsed.get("exception") else "")
    if kind == "response" and isinstance(parsed.get("command"), str):
        return str(parsed["command"])
    return kind


def _time_at(ends: list[int], times: list[float], offset: int) -> float:
    """The time of the chunk holding byte ``offset`` (the last chunk's past the end)."""
    i = bisect.bisect_right(ends, offset)
    return times[min(i, len(times) - 1)] if times else 0.0


def decode_streams(
    streams: dict[str, list[tuple[float, bytes]]], rx_framing: Any, rx_parser: Any, directions: Sequence[str]
) -> list[dict[str, Any]]:
    """Frames of each direction (``decode``'s dicts: t, dir, offset, data, encoding, checksum_valid,
    parsed; or t, dir, offset, error), merged by time as ``decode`` merges them."""
    out: list[dict[str, Any]] = []
    for direction in directions:
        decoder = StreamDecoder(rx_framing or dict(DEFAULT_FRAMING), rx_parser, 0)
        ends: list[int] = []  # stream position after each chunk
        times: list[float] = []
        events: list[DecodedFrame | FramingError] = []
        pos = 0
        for t, chunk in streams.get(direction, []):
            pos += len(chunk)
            ends.append(pos)
            times.append(t)
            events += decoder.feed(chunk)
        events += decoder.flush()
        for ev in events:
            if isinstance(ev, FramingError):
                t = _time_at(ends, times, ev.offset)
                out.append({"t": t, "dir": direction, "offset": ev.offset, "error": ev.message})
                continue
            text, enc = encode_output(ev.data, "utf8")
            item: dict[str, Any] = {
                "t": _time_at(ends, times, ev.end - 1),
                "dir": direction,
                "offset": ev.start,
                "data": text,
                "encoding": enc,
            }
            if ev.checksum_valid is not None:
                item["checksum_valid"] = ev.checksum_valid
            if ev.parsed is not None:
                item["parsed"] = ev.parsed
            out.append(item)
    out.sort(key=lambda item: (item["t"], item["dir"] != "tx", item["offset"]))
    return out


def _short(value: object) -> str:
    if isinstance(value, list) and all(not isinstance(v, list | dict) for v in value):
        return ",".join("" if v is None else str(v) for v in value)
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def summarize(parsed: dict[str, Any] | None) -> str:
    """The parsed fields as ``key=value`` text, without what the data column or kind already say."""
    if not parsed:
        return ""
    skip = set(_ALWAYS_SHOWN)
    if parsed.get("kind") in ("sentence", "ais"):
        skip.update(("fields", "talker", "manufacturer", "sentence"))
    text = " ".join(f"{k}={_short(v)}" for k, v in parsed.items() if k not in skip and v is not None)
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def decode_frames(events: Iterable[CaptureEvent], rx_framing: Any, rx_parser: Any) -> FrameTable:
    """Decode both directions of ``events`` and tabulate the frames (bad ones kept and marked)."""
    streams: dict[str, list[tuple[float, bytes]]] = {"rx": [], "tx": []}
    for e in events:
        if e.type in streams and e.data:
            streams[e.type].append((e.t, e.data))
    parser = copy.deepcopy(rx_parser)
    validating = isinstance(parser, dict) and parser.get("validate") is True
    if validating:
        parser["validate"] = False
    frames = decode_streams(streams, rx_framing, parser, ("rx", "tx"))
    table = FrameTable()
    for f in frames:
        d = "r" if f["dir"] == "rx" else "t"
        if "error" in f:
            table.errors += 1
            table.kinds["framing error"] = table.kinds.get("framing error", 0) + 1
            table.rows.append([round(f["t"], 6), d, f["offset"], "framing error", 0, f["error"], "e", ""])
            continue
        parsed = f.get("parsed")
        kind = frame_kind(parsed)
        table.kinds[kind] = table.kinds.get(kind, 0) + 1
        valid = f.get("checksum_valid")
        if valid is False:
            table.bad += 1
        summary = summarize(parsed)
        encoding = "u" if f["encoding"] == "utf8" else "h"
        flag = None if valid is None else int(valid)
        table.rows.append([round(f["t"], 6), d, f["offset"], kind, flag, f["data"], encoding, summary])
        if parsed:
            table.parsed.append((f["t"], f["dir"], parsed, valid))
    table.would_drop = table.bad if validating else 0
    return table
