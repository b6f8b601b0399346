"""JSON Lines / NDJSON: one JSON value per frame; anything else is kept as raw text, not an error."""

from __future__ import annotations

import json
from typing import Any

from serial_mcp.core.parsers.base import OptionlessParser, Parsed


def _no_constants(name: str) -> Any:
    """NaN and Infinity are not JSON; refusing them keeps ``fields`` serialisable."""
    raise ValueError(name)


class JsonLinesParser(OptionlessParser):
    """``{"kind": "json", "value": ...}`` or ``{"kind": "raw", "text": ...}``."""

    def parse(self, payload: bytes) -> Parsed:
        """Decode one JSON value; mixed streams (e.g. NMEA between JSON objects) come back raw."""
        try:
            text = payload.decode("utf-8")
        except UnicodeDecodeError:
            return Parsed({"kind": "raw", "text": payload.decode("utf-8", "replace").strip()})
        stripped = text.strip()
        if stripped:
            try:
                return Parsed({"kind": "json", "value": json.loads(stripped, parse_constant=_no_constants)})
            except (ValueError, RecursionError):
                pass
        return Parsed({"kind": "raw", "text": stripped})
