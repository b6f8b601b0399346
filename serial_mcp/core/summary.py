"""The summary of a decoded stream: counts per kind and message type, bad frames by reason, the
last frame of each type and the range of its numeric values (sans-IO, bounded).

``read(summary=true)`` feeds every event of its window here instead of returning frames, so an
agent asking "which UBX messages arrive, and where is the receiver?" gets one short answer, not
half a megabyte of frames. Whatever the stream's length the summary stays a few KB: at most
:data:`MAX_TYPES` message types (the rest are counted under ``other``), :data:`MAX_FIELDS` numeric
fields per type and :data:`MAX_BAD_KEPT` bad frames named. The work per frame is a dictionary
update and the few values :func:`frame_values.values_of` picks, which is small beside decoding it.

Counts are exact and are those a frame-by-frame read of the same bytes gives, bad frames included:
``frames`` = ``valid`` + ``bad`` (per type too), where ``bad`` are the frames with a failed checksum
(dropped with the parser's ``validate``, or returned marked bad), framing errors (a frame cut at a
length limit, a bad escape) and a damaged frame still pending when the window ended;
``bytes_skipped`` the bytes that went into no frame, and ``pending`` the bytes the window's end cut.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from serial_mcp import messages
from serial_mcp.core.decode import DecodedEvent, DecodedFrame
from serial_mcp.core.frame_values import VALUE_NAMES, Value, message_type, protocol_of, values_of
from serial_mcp.core.framing.base import FramingError
from serial_mcp.core.framing.checksum_detail import checksum_detail
from serial_mcp.core.unknown_keys import did_you_mean
from serial_mcp.errors import InvalidArgument

MAX_TYPES: Final = 32
MAX_FIELDS: Final = 8
MAX_BAD_KEPT: Final = 8
MAX_NAMED_FIELDS: Final = 8  # fields= the caller may name
EXCERPT: Final = 40  # characters of a bad frame shown
LAST_FIELDS: Final = 8  # decoded fields of a type's last binary frame kept
OTHER: Final = "other"
#: Why bytes went into no frame: what the framings skip.
SKIPPED_REASON: Final = "in no frame (noise, false starts, frames torn by a gap or the window's start)"


#: Parsers whose values a summary knows by name (``fields=`` outside them is refused); ``None``: no
#: parser, no values. Other parsers (``json_lines``…) carry the device's own names.
NAMED_PARSERS: Final = frozenset({None, "nmea", "gnss", "ubx", "rtcm3", "modbus_rtu", "modbus_ascii"})
_MODBUS_KEYS: Final = ("address", "function", "byte_count", "exception_code", "output_value", "and_mask")
_RTCM_COUNTS: Final = ("NSat", "NSig", "NCell")


def _keys(tree: object, out: set[str]) -> set[str]:
    """Every dictionary key in a nest of dictionaries and tuples (pyubx2's and pyrtcm's payload
    definitions: attribute names, groups and bit fields)."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            out.add(str(key))
            _keys(value, out)
    elif isinstance(tree, tuple):
        for value in tree:
            _keys(value, out)
    return out


@functools.cache
def known_fields() -> frozenset[str]:
    """The names ``fields=`` may give: the values a frame's line shows (``hdop``, ``lat``…), Modbus
    keys, and every UBX and RTCM3 attribute pyubx2 / pyrtcm decode (their own definitions)."""
    from pyrtcm.rtcmtypes_get import RTCM_PAYLOADS_GET  # type: ignore[import-untyped]
    from pyubx2.ubxtypes_get import UBX_PAYLOADS_GET  # type: ignore[import-untyped]

    names = _keys(UBX_PAYLOADS_GET, set()) | _keys(RTCM_PAYLOADS_GET, set())
    return frozenset(names | VALUE_NAMES | set(_MODBUS_KEYS) | set(_RTCM_COUNTS))


def check_fields(names: Sequence[str], parser: str | None) -> None:
    """Refuse a name in ``fields`` that no frame of ``parser`` can have, naming the closest known one
    (``fields: ["hdp"]`` never silently changes nothing)."""
    if parser not in NAMED_PARSERS:
        return
    known = known_fields()
    for name in names:
        base = name.partition("[")[0]
        if base not in known:
            hint = did_you_mean(base, sorted(VALUE_NAMES) + sorted(known - VALUE_NAMES))
            raise InvalidArgument(
                messages.READ_SUMMARY_UNKNOWN_FIELD.format(name=name, hint=hint), field="fields"
            )


def type_key(parsed: dict[str, Any] | None) -> str:
    """``ubx NAV-PVT``, ``nmea GPGGA``, ``rtcm3 1077``, ``modbus fc03``, ``at final OK``, ``frame``."""
    if not parsed:
        return "frame"
    protocol, kind = protocol_of(parsed), message_type(parsed)
    return protocol if kind == protocol else f"{protocol} {kind}"


def excerpt(data: bytes) -> str:
    """The start of a frame as text: printable ASCII as is, anything else as hex."""
    head = data[:EXCERPT]
    if all(32 <= b < 127 or b in (9, 10, 13) for b in head):
        text = head.decode("ascii").strip("\r\n")
    else:
        text = head[: EXCERPT // 2].hex()
    return text + ("…" if len(data) > len(head) else "")


def last_of(frame: DecodedFrame) -> dict[str, Any] | str:
    """A type's last frame, short: the values the parser understood, else the first
    :data:`LAST_FIELDS` decoded fields of a binary message, else the start of the frame."""
    values = values_of(frame.parsed)
    if values:
        return dict(values)
    inner = (frame.parsed or {}).get("fields")
    if isinstance(inner, dict) and inner:
        return {k: v for k, v in list(inner.items())[:LAST_FIELDS] if not k.startswith("reserved")}
    return excerpt(frame.data)


def bad_kind(event: DecodedEvent) -> str:
    """The kind of fault of a bad frame or error: ``checksum``, ``cut_at_max_length`` (a frame longer
    than the framing's limit), ``invalid`` (too short for its protocol), or ``framing`` (an escape or
    other fault the framing reported)."""
    if isinstance(event, FramingError):
        return "cut_at_max_length" if "long" in event.message else "framing"
    if event.parsed and event.parsed.get("kind") == "invalid":
        return "invalid"
    return "checksum"


def bad_reason(event: DecodedEvent) -> str:
    """Why a frame or error is bad, in words: :func:`bad_kind`, with a checksum's computed and
    received values where they can be told (``checksum (computed 47, received 48)``)."""
    kind = bad_kind(event)
    if kind != "checksum" or isinstance(event, FramingError):
        return kind
    detail = event.detail or checksum_detail(event.data, event.parsed)
    return f"checksum ({detail})" if detail else kind


@dataclass(slots=True)
class _Range:
    low: float
    high: float
    total: float
    n: int
    last: float

    def add(self, value: float) -> None:
        self.low = min(self.low, value)
        self.high = max(self.high, value)
        self.total += value
        self.n += 1
        self.last = value

    def as_dict(self) -> dict[str, float]:
        return {"min": self.low, "max": self.high, "mean": round(self.total / self.n, 7), "last": self.last}


@dataclass(slots=True)
class _TypeStats:
    valid: int = 0
    bad: int = 0
    last: DecodedFrame | None = None
    ranges: dict[str, _Range] = field(default_factory=dict)


def _numbers(values: dict[str, Value]) -> Iterable[tuple[str, float]]:
    for key, value in values.items():
        if key and isinstance(value, int | float) and not isinstance(value, bool):
            yield key, value


def _named(parsed: dict[str, Any], names: Sequence[str]) -> Iterable[tuple[str, float]]:
    """The caller's ``fields``: looked up in the frame's values (``hdop``, ``lat``…), then the decoded
    message (UBX/RTCM3 ``fields``), then the parsed frame itself; ``registers[3]`` picks one element."""
    sources = (values_of(parsed), parsed.get("fields"), parsed)
    for name in names:
        base, _, index = name.partition("[")
        value: Any = None
        for source in sources:
            if isinstance(source, dict) and base in source:
                value = source[base]
                break
        if index and isinstance(value, list):
            try:
                value = value[int(index.rstrip("]"))]
            except (ValueError, IndexError):
                value = None
        if isinstance(value, int | float) and not isinstance(value, bool):
            yield name, value


class StreamSummary:
    """Feed it a window's events (:meth:`add_events`, :meth:`add_rejected`, :meth:`add_pending`);
    :meth:`as_dict` is the summary. Only the reading coroutine (or the decode worker it waits for)
    touches it.

    Every frame counts once: ``frames`` = ``valid`` + ``bad``, and per type ``n`` = ``valid`` +
    ``bad``. Bad frames are those with a failed checksum (returned marked bad, or dropped by the
    parser's ``validate``), framing errors (a frame cut at a length limit, a bad escape) and a
    damaged frame still pending when the window ended."""

    __slots__ = (
        "_bad_kept",
        "_fields",
        "_types",
        "bad",
        "bad_reasons",
        "first_offset",
        "frames",
        "last_offset",
        "pending",
    )

    def __init__(self, fields: Sequence[str] = ()) -> None:
        self._fields = tuple(fields)[:MAX_NAMED_FIELDS]
        self._types: dict[str, _TypeStats] = {}
        self._bad_kept: list[dict[str, Any]] = []
        self.frames = 0
        self.bad = 0
        self.bad_reasons: dict[str, int] = {}
        self.first_offset: int | None = None
        self.last_offset: int | None = None
        self.pending: dict[str, Any] | None = None

    def _stats(self, key: str) -> _TypeStats:
        stats = self._types.get(key)
        if stats is None:
            if len(self._types) >= MAX_TYPES:
                key = OTHER
                stats = self._types.get(key)
            if stats is None:
                stats = self._types[key] = _TypeStats()
        return stats

    def _span(self, start: int, end: int) -> None:
        # events and rejected frames of one piece come in two lists: order by offset, not arrival
        if self.first_offset is None or start < self.first_offset:
            self.first_offset = start
        if self.last_offset is None or end > self.last_offset:
            self.last_offset = end

    def add_events(self, events: Iterable[DecodedEvent]) -> None:
        """Frames a read would return (a frame marked bad counts as bad) and framing errors."""
        for event in events:
            if isinstance(event, FramingError):
                self._bad(event, "framing error", bad_kind(event))
                continue
            if event.checksum_valid is False:
                self._bad_frame(event)
                continue
            self._span(event.start, event.end)
            parsed = event.parsed
            stats = self._stats(type_key(parsed))
            self.frames += 1
            stats.valid += 1
            stats.last = event
            if parsed:
                self._ranges(stats, parsed)

    def add_rejected(self, frames: Iterable[DecodedFrame]) -> None:
        """Frames the parser's ``validate`` dropped (a read counts them in ``frames_dropped``)."""
        for frame in frames:
            self._bad_frame(frame)

    def add_pending(self, damaged: DecodedFrame | None, offset: int, size: int) -> None:
        """The window ended with ``size`` undecided bytes from ``offset`` (a frame torn by the
        window's end, or cut off by its limit); ``damaged``: a frame among them that already failed
        its check (Modbus RTU's shorter shape) and is counted as bad."""
        if size <= 0 and damaged is None:
            return
        self.pending = {"offset": offset, "bytes": size}
        if damaged is not None:
            self.pending["damaged"] = True
            self._bad_frame(damaged, "damaged_pending")

    def _bad_frame(self, frame: DecodedFrame, kind: str | None = None) -> None:
        self._span(frame.start, frame.end)
        key = type_key(frame.parsed)
        self._stats(key).bad += 1
        self.frames += 1
        self._bad(frame, key, kind or bad_kind(frame))

    def _bad(self, event: DecodedEvent, key: str, kind: str) -> None:
        if isinstance(event, FramingError):
            self.frames += 1
            self._stats(key).bad += 1
        self.bad += 1
        self.bad_reasons[kind] = self.bad_reasons.get(kind, 0) + 1
        kept = self._bad_kept
        offset = event.offset if isinstance(event, FramingError) else event.start
        if len(kept) >= MAX_BAD_KEPT and offset >= kept[-1]["offset"]:
            return  # the first bad frames of the window are named, by offset
        if isinstance(event, FramingError):
            kept.append({"offset": offset, "reason": kind, "error": event.message[:80]})
        else:
            reason = bad_reason(event) if kind == bad_kind(event) else kind
            kept.append({"offset": offset, "type": key, "reason": reason, "excerpt": excerpt(event.data)})
        kept.sort(key=lambda b: int(b["offset"]))
        del kept[MAX_BAD_KEPT:]

    def _ranges(self, stats: _TypeStats, parsed: dict[str, Any]) -> None:
        ranges = stats.ranges
        pairs = _named(parsed, self._fields) if self._fields else _numbers(values_of(parsed))
        for name, value in pairs:
            span = ranges.get(name)
            if span is not None:
                span.add(value)
            elif len(ranges) < MAX_FIELDS:
                ranges[name] = _Range(value, value, value, 1, value)

    def as_dict(self, bytes_skipped: int = 0) -> dict[str, Any]:
        """The summary: ``frames`` (= ``valid`` + ``bad``), the bad ones by reason, bytes skipped,
        a frame pending at the window's end; per type ``n`` (= ``valid`` + ``bad``), the last valid
        frame's values (or an excerpt of it) and ``ranges`` of its numeric fields; ``bad_frames``
        names the first few."""
        types: dict[str, Any] = {}
        for key, stats in sorted(self._types.items(), key=lambda kv: -(kv[1].valid + kv[1].bad)):
            entry: dict[str, Any] = {"n": stats.valid + stats.bad, "valid": stats.valid}
            if stats.bad:
                entry["bad"] = stats.bad
            last = stats.last
            if last is not None:
                entry["last"] = last_of(last)
                entry["last_offset"] = last.start
            if stats.ranges:
                entry["ranges"] = {k: r.as_dict() for k, r in stats.ranges.items()}
            types[key] = entry
        out: dict[str, Any] = {"frames": self.frames, "valid": self.frames - self.bad, "bad": self.bad}
        if self.bad_reasons:
            out["bad_reasons"] = dict(self.bad_reasons)
        if bytes_skipped:
            out["bytes_skipped"] = bytes_skipped
            out["skipped_reason"] = SKIPPED_REASON
        if self.pending is not None:
            out["pending"] = dict(self.pending)
        if self.first_offset is not None:
            out["first_offset"] = self.first_offset
            out["last_offset"] = self.last_offset
        out["types"] = types
        if self._bad_kept:
            out["bad_frames"] = list(self._bad_kept)
        return out
