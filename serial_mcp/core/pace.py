"""TX pacing: gaps between bytes and/or lines, for bootloaders and modems that drop bytes.

Pure planning only: ``pace_chunks`` splits a payload into the pieces to write and the pause
after each; ``TxSession`` does the writing and sleeping.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from serial_mcp import messages
from serial_mcp.core.unknown_keys import reject_unknown_keys
from serial_mcp.errors import InvalidArgument

PACE_KEYS = ("inter_byte_us", "inter_line_ms")
MAX_INTER_BYTE_US = 1_000_000
MAX_INTER_LINE_MS = 60_000


@dataclass(frozen=True, slots=True)
class Pace:
    """Pause ``inter_byte_us`` after every byte and ``inter_line_ms`` after every line ending."""

    inter_byte_us: int = 0
    inter_line_ms: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"inter_byte_us": self.inter_byte_us, "inter_line_ms": self.inter_line_ms}


def parse_pace(spec: Any) -> Pace | None:
    """``{"inter_byte_us": 500, "inter_line_ms": 20}`` (either key); None/empty/zero means no pacing."""
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise InvalidArgument(messages.PACE_BAD)
    reject_unknown_keys(spec, PACE_KEYS, "pace")
    byte_us = spec.get("inter_byte_us", 0)
    line_ms = spec.get("inter_line_ms", 0)
    for value, top in ((byte_us, MAX_INTER_BYTE_US), (line_ms, MAX_INTER_LINE_MS)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
            raise InvalidArgument(messages.PACE_RANGE.format(byte=MAX_INTER_BYTE_US, line=MAX_INTER_LINE_MS))
    pace = Pace(byte_us, line_ms)
    return pace if (byte_us or line_ms) else None


def pace_chunks(data: bytes, pace: Pace) -> list[tuple[bytes, float]]:
    """The pieces to write and the pause (seconds) after each.

    Per byte when ``inter_byte_us`` is set, else per line (a line ends at LF, at CR not followed
    by LF, or at the end of the data). A line's pause replaces its last byte's pause.
    """
    byte_s = pace.inter_byte_us / 1e6
    line_s = pace.inter_line_ms / 1000
    out: list[tuple[bytes, float]] = []
    start = 0
    n = len(data)
    for i in range(n):
        b = data[i]
        line_end = b == 0x0A or (b == 0x0D and (i + 1 == n or data[i + 1] != 0x0A))
        if byte_s:
            out.append((data[i : i + 1], line_s if (line_end and line_s) else byte_s))
        elif line_end:
            out.append((data[start : i + 1], line_s))
            start = i + 1
    if not byte_s and start < n:
        out.append((data[start:], 0.0))
    return out
