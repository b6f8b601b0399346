"""The decoded frames of a capture, through exactly the decoders ``serial-mcp decode`` uses.

``core/presets`` resolves the settings and ``core/decode.StreamDecoder`` frames and parses, as in
``serial-mcp decode``; :func:`decode_streams` gives the same frames, times and order as
``commands.decode.decode_streams`` (a test holds them equal) but finds each frame's time by bisection,
so a capture of 100k chunks costs no more per frame than a small one. One difference, on
purpose: a parser that validates (the ``nmea0183`` and ``modbus_ascii`` presets) would drop bad
frames, and the view exists to show them, so it decodes with ``validate`` off and
marks those frames bad instead (``would_drop`` counts what ``decode`` leaves out). Lines an ``esp_log``
``print_filter`` hides are left out, as ``decode`` leaves them out, and counted (``filtered``).

Layout (compact JSON, one column per field, so 300k frames cost ~30 bytes each): ``t``, ``dir``
(``r``/``t`` per frame), ``off`` and ``len`` (the frame's bytes in its direction's stream, which the
page reads from the transcript), ``kind`` (index into ``kinds``), ``valid`` (``1`` good, ``0`` bad
checksum, ``-`` unchecked, ``e`` framing error), and two sparse lists: ``data`` ``[i, "u"|"h",
data]`` for frames whose payload is not their wire bytes, ``notes`` ``[i, text]`` with the parsed
fields as ``key=value`` text (or a framing error's message).
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from serial_mcp.core import offline_decode
from serial_mcp.core.capture import CaptureEvent
from serial_mcp.core.presets import effective
from serial_mcp.view.series import nmea_values

SUMMARY_CHARS: Final = 240
_SUMMARY_ITEMS: Final = SUMMARY_CHARS // 4  # items of a dict that fill SUMMARY_CHARS ('"k":1,' ≥ 4 each)
DEFAULT_FRAMING: Final = {"type": "line", "ending": "auto"}
_ALWAYS_SHOWN: Final = ("kind", "start", "text")  # in the kind column, or the frame's own text


@dataclass(slots=True)
class FrameTable:
    """Decoded frames as columns (see the module docstring), their parsed fields, and the counts."""

    t: list[float] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    kind_index: list[int] = field(default_factory=list)
    valid: list[str] = field(default_factory=list)  # "1" good, "0" bad, "-" unchecked, "e" framing error
    data: list[list[Any]] = field(default_factory=list)  # [i, encoding, data] where not the wire bytes
    notes: list[list[Any]] = field(default_factory=list)  # [i, parsed summary or error message]
    kinds: dict[str, int] = field(default_factory=dict)  # name -> index, in order of first appearance
    kind_counts: list[int] = field(default_factory=list)
    parsed: list[tuple[float, str, dict[str, Any], bool | None]] = field(default_factory=list)
    bad: int = 0
    errors: int = 0
    would_drop: int = 0
    filtered: int = 0  # frames a print filter hid (``--print-filter``): not in the table

    def __len__(self) -> int:
        return len(self.t)

    def add(self, t: float, direction: str, offset: int, length: int, kind: str, valid: str) -> int:
        """Append one frame's columns; returns its index."""
        index = self.kinds.setdefault(kind, len(self.kinds))
        if index == len(self.kind_counts):
            self.kind_counts.append(0)
        self.kind_counts[index] += 1
        self.t.append(round(t, 6))
        self.dirs.append(direction)
        self.offsets.append(offset)
        self.lengths.append(length)
        self.kind_index.append(index)
        self.valid.append(valid)
        return len(self.t) - 1

    def as_json(self) -> dict[str, Any]:
        return {
            "t": self.t,
            "dir": "".join(self.dirs),
            "off": self.offsets,
            "len": self.lengths,
            "kind": self.kind_index,
            "kinds": list(self.kinds),
            "kind_counts": self.kind_counts,
            "valid": "".join(self.valid),
            "data": self.data,
            "notes": self.notes,
            "bad": self.bad,
            "errors": self.errors,
            "would_drop": self.would_drop,
            "filtered": self.filtered,
        }


def resolve_settings(protocol: str | None, rx_framing: Any, rx_parser: Any) -> tuple[Any, Any]:
    """(rx_framing, rx_parser) as ``decode`` resolves them (presets, ``raw``, explicit fields)."""
    resolved = effective({"protocol": protocol, "rx_framing": rx_framing, "rx_parser": rx_parser}, {})
    return resolved.rx_framing, resolved.rx_parser


def frame_kind(parsed: dict[str, Any] | None) -> str:
    """A short name to filter frames by: the NMEA sentence type, the UBX/RTCM3 message, the Modbus
    function, the AT kind."""
    if not parsed:
        return "frame"
    if isinstance(parsed.get("sentence"), str):
        if parsed.get("talker") == "P":
            return str(parsed.get("address") or "P")
        return str(parsed["sentence"]) or str(parsed.get("address") or "sentence")
    kind = str(parsed.get("kind") or "frame")
    protocol = parsed.get("protocol")
    if protocol in ("ubx", "rtcm3"):  # the gnss preset's binary messages: UBX NAV-PVT, RTCM3 1077
        return f"{protocol} {parsed.get('name') or parsed.get('type') or kind}"
    if kind == "modbus":
        return f"fn {parsed.get('function')}" + (" exception" if parsed.get("exception") else "")
    if kind == "response" and isinstance(parsed.get("command"), str):
        return str(parsed["command"])
    return kind


def decode_streams(
    streams: dict[str, list[tuple[float, bytes]]],
    rx_framing: Any,
    rx_parser: Any,
    directions: Sequence[str],
    filtered: dict[str, int] | None = None,
) -> list[dict[str, Any]]:
    """Frames of each direction (``decode``'s dicts), merged by time as ``decode`` merges them;
    ``filtered`` gets each direction's count of frames a print filter hid."""
    frames, _ = offline_decode.decode_streams(streams, rx_framing, rx_parser, directions, filtered=filtered)
    return frames


def _short(value: object) -> str:
    if isinstance(value, list) and all(not isinstance(v, list | dict) for v in value):
        return ",".join("" if v is None else str(v) for v in value)
    if isinstance(value, dict) and len(value) > _SUMMARY_ITEMS:
        # a summary keeps SUMMARY_CHARS: the first items say as much as a GNSS frame's thousands
        value = dict(itertools.islice(value.items(), _SUMMARY_ITEMS))
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def summarize(parsed: dict[str, Any] | None) -> str:
    """The parsed fields as ``key=value`` text, without what the data column or kind already say
    (an NMEA sentence shows the values it is plotted by: ``fix_quality=1 satellites=8 ...``)."""
    if not parsed:
        return ""
    if parsed.get("kind") in ("sentence", "ais"):
        named = [f"{name.split('.', 1)[1]}={value:g}" for name, value in nmea_values(parsed)]
        extra = [f"{k}={_short(parsed[k])}" for k in ("trailer", "ais") if parsed.get(k) is not None]
        text = " ".join(named + extra)
    else:
        items = parsed.items()
        text = " ".join(f"{k}={_short(v)}" for k, v in items if k not in _ALWAYS_SHOWN and v is not None)
        if parsed.get("truncated") is True:  # a frame cut at the parser's field cap says so first
            text = "truncated " + text
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def decode_frames(events: Iterable[CaptureEvent], rx_framing: Any, rx_parser: Any) -> FrameTable:
    """Decode both directions of ``events`` and tabulate the frames (bad ones kept and marked).

    A frame whose bytes are the wire bytes at its offset (lines, NMEA, Modbus ASCII) is stored as
    offset and length only, and the page takes its text from the transcript; one that framing
    transformed (SLIP, COBS unescaping) carries its own data."""
    streams: dict[str, list[tuple[float, bytes]]] = {"rx": [], "tx": []}
    for e in events:
        if e.type in streams and e.data:
            streams[e.type].append((e.t, e.data))
    wire = {name: b"".join(chunk for _, chunk in chunks) for name, chunks in streams.items()}
    parser = copy.deepcopy(rx_parser)
    validating = isinstance(parser, dict) and parser.get("validate") is True
    if validating:
        parser["validate"] = False
    table = FrameTable()
    filtered: dict[str, int] = {}
    for f in decode_streams(streams, rx_framing, parser, ("rx", "tx"), filtered):
        d = "r" if f["dir"] == "rx" else "t"
        offset = f["offset"]
        if "error" in f:
            table.errors += 1
            i = table.add(f["t"], d, offset, 0, "framing error", "e")
            table.notes.append([i, f["error"]])
            continue
        parsed = f.get("parsed")
        valid = f.get("checksum_valid")
        table.bad += valid is False
        data = f["data"].encode() if f["encoding"] == "utf8" else bytes.fromhex(f["data"])
        flag = "-" if valid is None else "1" if valid else "0"
        i = table.add(f["t"], d, offset, len(data), frame_kind(parsed), flag)
        if wire[f["dir"]][offset : offset + len(data)] != data:
            table.data.append([i, "u" if f["encoding"] == "utf8" else "h", f["data"]])
        if summary := summarize(parsed):
            table.notes.append([i, summary])
        if parsed:
            table.parsed.append((f["t"], f["dir"], parsed, valid))
    table.would_drop = table.bad if validating else 0
    table.filtered = sum(filtered.values())
    return table
