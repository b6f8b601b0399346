"""The transcript of a capture: rx and tx interleaved in file order, as rows of text or hex (sans-IO).

A row is one line (up to and including its LF) of one direction, cut short at ``MAX_ROW`` bytes,
at a change of direction and at a gap of silence, so binary streams and prompts without a line
ending still read well. Each row keeps its time (when its last byte arrived, as ``decode`` times a
frame) and its byte position in its direction's stream, which links it to the timeline's events
and to the decoded frames. Markers (line control, BREAK, errors ...) are rows of their own.

Row layout (compact JSON): ``[t, dir, position, mode, content]`` with ``dir`` ``r``/``t``
(``m`` for a marker, whose ``position`` slot holds the marker kind), ``mode`` 0 text, 1 hex,
2 marker. Text keeps ANSI escapes and control bytes (the page shows or strips them).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from serial_mcp.core.capture import CaptureEvent
from serial_mcp.view.timeline import marker_of

MAX_ROW: Final = 512
_TEXT_CONTROLS: Final = frozenset("\t\r\n\x1b\x07\x08")
TEXT, HEX, MARKER = 0, 1, 2


def row_content(data: bytes) -> tuple[int, str]:
    """(mode, content): text when the bytes are UTF-8 with few control bytes, else lowercase hex."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return HEX, data.hex()
    controls = sum(1 for c in text if (c < " " or c == "\x7f") and c not in _TEXT_CONTROLS)
    if controls > max(2, len(text) // 10):
        return HEX, data.hex()
    return TEXT, text


class _Rows:
    __slots__ = ("buf", "dir", "last_t", "pos", "rows")

    def __init__(self) -> None:
        self.rows: list[list[Any]] = []
        self.buf = bytearray()
        self.dir = ""
        self.pos = 0
        self.last_t = 0.0

    def flush(self) -> None:
        if self.buf:
            mode, content = row_content(bytes(self.buf))
            self.rows.append([round(self.last_t, 6), self.dir, self.pos, mode, content])
            self.pos += len(self.buf)
            self.buf.clear()

    def feed(self, direction: str, position: int, t: float, data: bytes) -> None:
        start = 0
        while start < len(data):
            if not self.buf:
                self.dir, self.pos = direction, position + start
            room = MAX_ROW - len(self.buf)
            newline = data.find(b"\n", start, start + room)
            end = newline + 1 if newline >= 0 else min(len(data), start + room)
            self.buf += data[start:end]
            self.last_t = t
            if newline >= 0 or len(self.buf) >= MAX_ROW:
                self.flush()
            start = end


def build_rows(events: Iterable[CaptureEvent], gap_s: float) -> list[list[Any]]:
    """Transcript rows for ``events`` (see the module docstring for the layout)."""
    rows = _Rows()
    positions = {"r": 0, "t": 0}
    last_data_t: float | None = None
    for e in events:
        marker = marker_of(e)
        if marker is not None:
            rows.flush()
            rows.rows.append([round(e.t, 6), "m", marker[0], MARKER, marker[1]])
        if e.data is None or e.type not in ("rx", "tx"):
            continue
        direction = "r" if e.type == "rx" else "t"
        if rows.buf and (direction != rows.dir or (last_data_t is not None and e.t - last_data_t > gap_s)):
            rows.flush()
        rows.feed(direction, positions[direction], e.t, e.data)
        positions[direction] += len(e.data)
        last_data_t = e.t
    rows.flush()
    return rows.rows
