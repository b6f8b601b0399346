"""Capture files (``shared/design/CAPTURE_FORMAT.md``, version 1), sans-IO.

One JSON object per line: line 1 is the header, every other line one timestamped event. This
module only turns models into lines and lines into validated models; writing files (no-clobber,
quotas, fsync) belongs to the caller. Rules that matter to every reader:

- ``data`` (lowercase hex) is the only payload; ``text`` is written for humans and grep and is
  never read back.
- Unknown fields are ignored (kept in ``CaptureEvent.fields``); unknown event types are skipped
  and counted, so newer writers stay readable.
- Every error names its line number and field (code ``capture_invalid``) but never quotes a value
  from the file: a file that is not a capture (a config holding a password) must not be read out
  through error messages.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from serial_mcp import messages
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import ErrorCode, InvalidArgument

FORMAT_NAME: Final = "serial-mcp-capture"
FORMAT_VERSION: Final = 1
EVENT_TYPES: Final = frozenset(
    {"open", "close", "rx", "tx", "control", "break", "config", "marker", "error", "lost"}
)
PAYLOAD_TYPES: Final = frozenset({"rx", "tx"})
_CORE_KEYS: Final = frozenset({"t", "type", "data", "text", "offset"})
_HEADER_KEYS: Final = (
    "format",
    "version",
    "created",
    "port",
    "settings",
    "device",
    "source",
    "note",
    "start_offset",
)
_SHOWN: Final = 60
_HEX_DIGITS: Final = frozenset("0123456789abcdefABCDEF")
_LINE_BREAK_ESCAPES: Final = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}


class CaptureError(InvalidArgument):
    """A capture file does not follow the format; ``line`` is the 1-based line number."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(ErrorCode.CAPTURE_INVALID, message, line=line)
        self.line = line


@dataclass(frozen=True, slots=True)
class CaptureHeader:
    """Line 1: what was recorded, where and when. Only ``created`` is required of a writer."""

    created: str
    port: str | None = None
    settings: dict[str, Any] | None = None
    device: dict[str, Any] | None = None
    source: str | None = None
    note: str | None = None
    start_offset: int | None = None  # the RX offset the capture starts at (a recording: issue 37)
    format: str = FORMAT_NAME
    version: int = FORMAT_VERSION

    def created_at(self) -> datetime:
        """``created`` as an aware UTC datetime (validated when parsed)."""
        return _parse_created(self.created)


@dataclass(frozen=True, slots=True)
class CaptureEvent:
    """One event: ``t`` seconds since ``created``; ``data`` for rx/tx; the other fields in ``fields``."""

    t: float
    type: str
    data: bytes | None = None
    offset: int | None = None
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Capture:
    """A parsed capture: header, known events in file order, and what was skipped."""

    header: CaptureHeader
    events: list[CaptureEvent]
    skipped_unknown: int = 0
    unknown_types: dict[str, int] = field(default_factory=dict)
    torn_tail: bool = False  # a final, unterminated line that was not JSON was dropped

    @property
    def duration(self) -> float:
        """The ``t`` of the last event (0.0 when there are none)."""
        return self.events[-1].t if self.events else 0.0

    def payload(self, direction: str) -> bytes:
        """All bytes of one direction (``rx`` or ``tx``) concatenated, in order."""
        return b"".join(e.data for e in self.events if e.type == direction and e.data is not None)


# --- writing ---------------------------------------------------------------------------------------


def utc_created(when: datetime | None = None) -> str:
    """A ``created`` value: UTC, microseconds, ``Z`` suffix (``2026-11-30T10:15:02.123456Z``)."""
    moment = (when or datetime.now(UTC)).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def settings_to_header(settings: SerialSettings) -> dict[str, Any]:
    """Our settings under the format's (pyserial-style) names: ``baudrate``, ``parity`` as ``N``..."""
    return {**settings.pyserial(), "flow_control": settings.flow_control}


def settings_from_header(values: Mapping[str, Any], base: SerialSettings | None = None) -> SerialSettings:
    """The inverse of ``settings_to_header`` (also for a partial ``config`` event); ``InvalidArgument``."""
    base = base or SerialSettings()
    return base.updated(
        baud_rate=values.get("baudrate"),
        data_bits=values.get("bytesize"),
        parity=values.get("parity"),
        stop_bits=values.get("stopbits"),
        flow_control=values.get("flow_control"),
    )


def _dumps(obj: Mapping[str, Any]) -> str:
    """One JSON line. ensure_ascii=False keeps text greppable in the UTF-8 file; the characters that
    ``str.splitlines`` would break a line at (NEL, U+2028, U+2029) are escaped anyway."""
    text = json.dumps(obj, ensure_ascii=False, allow_nan=False)
    return text.translate(_LINE_BREAK_ESCAPES)


def header_line(header: CaptureHeader) -> str:
    """Line 1 (no newline): required keys first, optional ones only when set."""
    obj: dict[str, Any] = {}
    for key in _HEADER_KEYS:
        value = getattr(header, key)
        if value is not None:
            obj[key] = value
    return _dumps(obj)


def _format_t(t: float) -> str:
    if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or t < 0:
        raise InvalidArgument(
            messages.CAPTURE_BAD_EVENT.format(field="t", expected="a finite number >= 0", value=_shown(t))
        )
    return f"{t:.6f}"


def event_line(event: CaptureEvent) -> str:
    """One event as a line (no newline): ``t`` with microseconds, ``data`` as lowercase hex, and
    ``text`` only when the bytes decode as UTF-8 cleanly. Unknown ``fields`` are written as given."""
    obj: dict[str, Any] = {"type": event.type}
    if event.offset is not None:
        obj["offset"] = event.offset
    if event.data is not None:
        obj["data"] = event.data.hex()
        try:
            obj["text"] = event.data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    elif event.type in PAYLOAD_TYPES:
        raise InvalidArgument(
            messages.CAPTURE_BAD_EVENT.format(field="data", expected="bytes for rx/tx", value="None")
        )
    for key, value in event.fields.items():
        if key not in _CORE_KEYS:
            obj[key] = value
    rest = _dumps(obj)
    return '{"t": ' + _format_t(event.t) + ", " + rest[1:]


def capture_text(header: CaptureHeader, events: Iterable[CaptureEvent]) -> str:
    """A whole capture file's text (header, events, trailing newline)."""
    return "".join(line + "\n" for line in (header_line(header), *(event_line(e) for e in events)))


# --- reading ---------------------------------------------------------------------------------------


def _shown(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, bytes) else repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _load(text: str, line: int) -> dict[str, Any]:
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        error = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise CaptureError(messages.CAPTURE_NOT_JSON.format(line=line, error=error), line) from None
    if not isinstance(obj, dict):
        raise CaptureError(messages.CAPTURE_NOT_OBJECT.format(line=line, kind=_kind(obj)), line)
    return obj


def _parse_created(value: str) -> datetime:
    moment = datetime.fromisoformat(value)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _kind(value: object) -> str:
    """A JSON value's type, never the value: errors about a file's content must not quote it."""
    kinds = {bool: "boolean", str: "string", list: "array", dict: "object", type(None): "null"}
    return kinds.get(type(value), "number")


def _bad_field(line: int, key: str, expected: str, value: object) -> CaptureError:
    return CaptureError(
        messages.CAPTURE_BAD_FIELD.format(line=line, field=key, expected=expected, kind=_kind(value)), line
    )


def _missing(line: int, key: str, hint: str = "") -> CaptureError:
    return CaptureError(messages.CAPTURE_MISSING.format(line=line, field=key, hint=hint), line)


def _optional(
    obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], expected: str, line: int
) -> Any:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise _bad_field(line, key, expected, value)
    return value


def parse_header(text: str, line: int = 1) -> CaptureHeader:
    """Validate one header line (``format``, ``version``, ``created`` required; the rest typed)."""
    obj = _load(text, line)
    for key in ("format", "version", "created"):
        if key not in obj:
            hint = ' (the first line must be the header: {"format": "serial-mcp-capture", ...})'
            raise _missing(line, key, hint)
    if obj["format"] != FORMAT_NAME:
        raise CaptureError(messages.CAPTURE_BAD_FORMAT.format(line=line), line)
    version = obj["version"]
    if isinstance(version, bool) or version != FORMAT_VERSION:
        raise CaptureError(messages.CAPTURE_BAD_VERSION.format(line=line), line)
    created = obj["created"]
    try:
        if not isinstance(created, str):
            raise ValueError(created)
        _parse_created(created)
    except ValueError:
        raise CaptureError(messages.CAPTURE_BAD_CREATED.format(line=line), line) from None
    return CaptureHeader(
        created=created,
        port=_optional(obj, "port", str, "a string", line),
        settings=_optional(obj, "settings", dict, "an object", line),
        device=_optional(obj, "device", dict, "an object", line),
        source=_optional(obj, "source", str, "a string", line),
        note=_optional(obj, "note", str, "a string", line),
        start_offset=_non_negative_int(obj, "start_offset", line),
    )


def _decode_hex(value: object, line: int) -> bytes:
    if not isinstance(value, str):
        problem = f"it is a JSON {_kind(value)}, not a string"
    elif (bad := next((i for i, c in enumerate(value) if c not in _HEX_DIGITS), -1)) >= 0:
        problem = f"the character at position {bad + 1} is not a hex digit"
    elif len(value) % 2:
        problem = "an odd number of digits"
    else:
        return bytes.fromhex(value)
    raise CaptureError(messages.CAPTURE_BAD_HEX.format(line=line, problem=problem), line)


def _non_negative_int(obj: Mapping[str, Any], key: str, line: int, required: bool = False) -> int | None:
    value = obj.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        if value is None:
            raise _missing(line, key)
        raise _bad_field(line, key, "a whole number >= 0", value)
    return value


def _check_fields(kind: str, obj: Mapping[str, Any], line: int) -> None:
    """Type-check the documented fields of the known non-payload events."""
    if kind == "lost":
        _non_negative_int(obj, "bytes", line, required=True)
    elif kind == "control":
        for key in ("dtr", "rts"):
            _optional(obj, key, bool, "true or false", line)
    elif kind == "break":
        ms = _optional(obj, "duration_ms", (int, float), "a number of milliseconds >= 0", line)
        if ms is not None and not (math.isfinite(ms) and ms >= 0):
            raise _bad_field(line, "duration_ms", "a number of milliseconds >= 0", ms)
    elif kind == "config":
        if obj.get("settings") is None:
            raise _missing(line, "settings", " for a config event")
        _optional(obj, "settings", dict, "an object", line)
    elif kind == "marker":
        _optional(obj, "label", str, "a string", line)
    elif kind == "error":
        _optional(obj, "message", str, "a string", line)


def _parse_event(obj: Mapping[str, Any], line: int, previous_t: float) -> tuple[float, CaptureEvent | None]:
    """(t, event); the event is None for an unknown type (skipped, but its t still counts)."""
    if "t" not in obj:
        raise _missing(line, "t")
    t = obj["t"]
    if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or t < 0:
        raise CaptureError(messages.CAPTURE_BAD_T.format(line=line), line)
    if t < previous_t:
        raise CaptureError(messages.CAPTURE_T_BACKWARDS.format(line=line), line)
    kind = obj.get("type")
    if not isinstance(kind, str) or not kind:
        raise _missing(line, "type") if kind is None else _bad_field(line, "type", "a string", kind)
    if kind not in EVENT_TYPES:
        return float(t), None
    data: bytes | None = None
    if kind in PAYLOAD_TYPES:
        if "data" not in obj:
            if "text" in obj:
                raise CaptureError(messages.CAPTURE_TEXT_ONLY.format(line=line, type=kind), line)
            raise _missing(line, "data", f" for a {kind} event")
        data = _decode_hex(obj["data"], line)
    offset = _non_negative_int(obj, "offset", line)
    _check_fields(kind, obj, line)
    fields = {k: v for k, v in obj.items() if k not in _CORE_KEYS}
    return float(t), CaptureEvent(t=float(t), type=kind, data=data, offset=offset, fields=fields)


def parse_capture(lines: Iterable[str], *, torn_tail_ok: bool = False) -> Capture:
    """Validate a whole capture. Blank lines are skipped; with ``torn_tail_ok`` a last line that is
    not JSON (a writer killed mid-line) is dropped and reported as ``torn_tail`` instead of an error."""
    header: CaptureHeader | None = None
    events: list[CaptureEvent] = []
    unknown: dict[str, int] = {}
    previous_t = 0.0
    pending: tuple[int, str] | None = None  # the latest non-blank line, parsed one step late

    def consume(number: int, text: str) -> None:
        nonlocal header, previous_t
        if header is None:
            header = parse_header(text, number)
            return
        obj = _load(text, number)
        previous_t, event = _parse_event(obj, number, previous_t)
        if event is None:
            kind = str(obj["type"])
            unknown[kind] = unknown.get(kind, 0) + 1
        else:
            events.append(event)

    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        if pending is not None:
            consume(*pending)
        pending = (number, text)
    torn = False
    if pending is not None:
        if torn_tail_ok and header is not None and not _is_json(pending[1]):
            torn = True
        else:
            consume(*pending)
    if header is None:
        raise CaptureError(messages.CAPTURE_EMPTY, 1)
    return Capture(header, events, sum(unknown.values()), unknown, torn)


def _is_json(text: str) -> bool:
    try:
        json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return False
    return True


def decode_lines(raw: bytes) -> list[str]:
    """Split file bytes into lines (a leading UTF-8 BOM is dropped); invalid UTF-8 names its line."""
    raw = raw.removeprefix(b"\xef\xbb\xbf")
    lines: list[str] = []
    for number, chunk in enumerate(raw.split(b"\n"), start=1):
        try:
            lines.append(chunk.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise CaptureError(
                messages.CAPTURE_NOT_UTF8.format(line=number, position=exc.start + 1), number
            ) from None
    return lines
