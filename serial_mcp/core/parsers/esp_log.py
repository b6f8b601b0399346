"""ESP-IDF log lines (``ESP_LOGx``): ``I (1234) wifi: connected`` -> level, timestamp, tag, message.

Fields of a log line: ``kind: "log"``, ``level`` (``E W I D V``), ``level_name`` (``error`` ...
``verbose``), ``tag``, ``message`` (colour and other ANSI escapes removed) and the timestamp the
firmware was built to print: ``timestamp_ms`` from the tick count ``(1234)``, or ``time``
(``HH:MM:SS.mmm``, CONFIG_LOG_TIMESTAMP_SOURCE_SYSTEM) with ``timestamp_ms`` since midnight, plus
``date`` when the full system date is printed (``(20-02-02 00:00:00.100)``); an unknown form is kept
as ``timestamp`` text. Any other line (ROM banners, ``printf`` output, prompts) is ``kind: "text"``.

With ``print_filter`` (esp-idf-monitor's ``--print_filter`` syntax, see
:mod:`~serial_mcp.core.parsers.esp_log_filter`) the lines it hides are left out of the decoded
frames and counted (``frames_filtered``); the bytes stay in the ring and in recordings.
"""

from __future__ import annotations

import re
from typing import Any, Final

from serial_mcp.core.parsers.base import Parsed, text_of
from serial_mcp.core.parsers.esp_log_filter import PrintFilter

_ANSI: Final = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_LINE: Final = re.compile(r"([EWIDV]) (?:\(([^)]+)\) )?([^:]+): ?(.*)", re.DOTALL)
_TICKS: Final = re.compile(r"\d+")
_CLOCK: Final = re.compile(r"(?:(\d{2,4}-\d{2}-\d{2}) )?(\d{1,2}):(\d{2}):(\d{2})\.(\d{3})")
_NAMES: Final = {"E": "error", "W": "warning", "I": "info", "D": "debug", "V": "verbose"}


def _timestamp(text: str, fields: dict[str, Any]) -> None:
    if _TICKS.fullmatch(text):
        fields["timestamp_ms"] = int(text)
        return
    m = _CLOCK.fullmatch(text)
    if m is None:
        fields["timestamp"] = text
        return
    date, hh, mm, ss, ms = m.groups()
    if date:
        fields["date"] = date
    fields["time"] = text[len(date) + 1 :] if date else text
    fields["timestamp_ms"] = ((int(hh) * 60 + int(mm)) * 60 + int(ss)) * 1000 + int(ms)


def parse_esp_log(payload: bytes) -> dict[str, Any]:
    """The fields of one line (see the module docstring)."""
    text = _ANSI.sub("", text_of(payload)).strip("\r\n")
    m = _LINE.match(text)
    if m is None:
        return {"kind": "text", "text": text}
    level, stamp, tag, message = m.groups()
    fields: dict[str, Any] = {"kind": "log", "level": level, "level_name": _NAMES[level], "tag": tag}
    if stamp is not None:
        _timestamp(stamp, fields)
    fields["message"] = message.rstrip("\r\n")
    return fields


class EspLogParser:
    """RX parser ``esp_log``; ``print_filter`` hides the lines esp-idf-monitor's filter would."""

    __slots__ = ("print_filter", "validate")

    def __init__(self, validate: bool = False, print_filter: PrintFilter | None = None) -> None:
        self.validate = validate
        self.print_filter = print_filter

    def parse(self, payload: bytes) -> Parsed:
        """See the module docstring; never raises."""
        shown = self.print_filter is None or self.print_filter.shows(payload)
        return Parsed(parse_esp_log(payload), shown=shown)
