"""grbl (CNC / laser controller) responses: ``ok``, ``error:N``, ``<status>``, ``ALARM:N``, ``[MSG:...]``."""

from __future__ import annotations

import re
from typing import Any, Final

from serial_mcp.core.parsers.base import OptionlessParser, Parsed, text_of

_ERROR_RE: Final = re.compile(r"^error:\s*(\d+)$", re.IGNORECASE)
_ALARM_RE: Final = re.compile(r"^ALARM:\s*(\d+)$", re.IGNORECASE)
_BRACKET_RE: Final = re.compile(r"^\[([A-Za-z0-9 ]+?)\s*:(.*)\]$", re.DOTALL)
_SETTING_RE: Final = re.compile(r"^\$(\d+)=(.*)$")
_WELCOME_RE: Final = re.compile(r"^Grbl\s+(\S+)")


def _number(text: str) -> int | float | str:
    """``"12"`` -> 12, ``"0.500"`` -> 0.5, anything else unchanged (NaN/inf stay text)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return text
    return value if value == value and value not in (float("inf"), float("-inf")) else text


def _status(body: str) -> dict[str, Any]:
    """``Idle|MPos:0.000,0.000,0.000|FS:0,0`` -> state plus numeric fields."""
    state, *items = body.split("|")
    name, _, sub = state.partition(":")
    out: dict[str, Any] = {"kind": "status", "state": name}
    if sub:
        out["substate"] = _number(sub)
    values: dict[str, Any] = {}
    for item in items:
        key, _, value = item.partition(":")
        values[key] = [_number(v) for v in value.split(",")] if value else True
    out["fields"] = values
    return out


class GrblParser(OptionlessParser):
    """Classifies one grbl line; ``ok`` and ``error:N`` end the exchange for a sent line."""

    def parse(self, payload: bytes) -> Parsed:
        """Kinds: ok, error, status, alarm, message, feedback, setting, welcome, text."""
        text = text_of(payload).strip()
        if text.lower() == "ok":
            return Parsed({"kind": "ok"}, final=True)
        m = _ERROR_RE.match(text)
        if m:
            return Parsed({"kind": "error", "code": int(m.group(1))}, final=True)
        if text.startswith("<") and text.endswith(">") and len(text) > 2:
            return Parsed(_status(text[1:-1]))
        m = _ALARM_RE.match(text)
        if m:
            return Parsed({"kind": "alarm", "code": int(m.group(1))})
        m = _BRACKET_RE.match(text)
        if m:
            tag, value = m.group(1), m.group(2)
            if tag == "MSG":
                return Parsed({"kind": "message", "text": value})
            return Parsed({"kind": "feedback", "tag": tag, "value": value})
        m = _SETTING_RE.match(text)
        if m:
            return Parsed({"kind": "setting", "id": int(m.group(1)), "value": _number(m.group(2))})
        m = _WELCOME_RE.match(text)
        if m:
            return Parsed({"kind": "welcome", "version": m.group(1), "text": text})
        return Parsed({"kind": "text", "text": text})
