"""TX pacing: gaps between bytes and/or lines, for bootloaders and modems that drop bytes.

Pure planning only: ``pace_chunks`` splits a payload into the pieces to write and the pause
after each; ``TxSession`` does the writing and sleeping.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field, Strict, TypeAdapter
from typing_extensions import TypedDict  # pydantic validates it on Python 3.11 too

from serial_mcp import messages
from serial_mcp.core.unknown_keys import keyed

MAX_INTER_BYTE_US = 1_000_000
MAX_INTER_LINE_MS = 60_000


class PaceSpec(TypedDict, total=False):
    """``pace`` as a caller gives it: ``{"inter_byte_us": 500}`` and/or ``{"inter_line_ms": 20}``."""

    inter_byte_us: Annotated[int, Strict(), Field(ge=0, le=MAX_INTER_BYTE_US)]
    inter_line_ms: Annotated[int, Strict(), Field(ge=0, le=MAX_INTER_LINE_MS)]


RANGE = messages.PACE_RANGE.format(byte=MAX_INTER_BYTE_US, line=MAX_INTER_LINE_MS)
PaceArg = Annotated[PaceSpec | None, keyed(PaceSpec, "pace", messages.PACE_BAD, RANGE)]
_CHECK: TypeAdapter[PaceSpec | None] | None = None


@dataclass(frozen=True, slots=True)
class Pace:
    """Pause ``inter_byte_us`` after every byte and ``inter_line_ms`` after every line ending."""

    inter_byte_us: int = 0
    inter_line_ms: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"inter_byte_us": self.inter_byte_us, "inter_line_ms": self.inter_line_ms}


def parse_pace(spec: object) -> Pace | None:
    """``spec`` (a call's, a profile's) checked as ``PaceSpec``; None/empty/zero means no pacing."""
    global _CHECK
    if spec is None:
        return None
    _CHECK = _CHECK or TypeAdapter(PaceArg)  # built on first use: start-up stays light
    given = _CHECK.validate_python(spec) or {}
    pace = Pace(given.get("inter_byte_us", 0), given.get("inter_line_ms", 0))
    return pace if (pace.inter_byte_us or pace.inter_line_ms) else None


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
