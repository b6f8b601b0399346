"""Captures made from raw device data for the view tests, and independent counts to check pages by."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from serial_mcp.core.capture import CaptureEvent, CaptureHeader, capture_text
from serial_mcp.store.capture_files import read_capture

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "captures"
DATA = REPO / "tests" / "data"  # real device data (see tests/data/SOURCES.md)


def capture_from_raw(
    raw: bytes, path: Path, baud: int = 9600, chunk_lines: int = 8, pause_every: int = 0, pause_s: float = 0.0
) -> Path:
    """Write ``raw`` as a capture: one rx event per ``chunk_lines`` lines, timed at ``baud`` (10 bits
    a byte), with a silence of ``pause_s`` after every ``pause_every`` chunks (a GPS dropout, a reset)."""
    lines = raw.splitlines(keepends=True)
    events = [CaptureEvent(0.0, "open", fields={"port": "/dev/ttyTEST"})]
    t, offset = 0.0, 0
    for n, start in enumerate(range(0, len(lines), chunk_lines), start=1):
        chunk = b"".join(lines[start : start + chunk_lines])
        t += len(chunk) * 10 / baud
        events.append(CaptureEvent(round(t, 6), "rx", chunk, offset))
        offset += len(chunk)
        if pause_every and n % pause_every == 0:
            t += pause_s
    events.append(CaptureEvent(round(t + 0.001, 6), "close"))
    header = CaptureHeader(
        created="2026-12-01T10:00:00.000000Z",
        port="/dev/ttyTEST",
        settings={"baudrate": baud, "bytesize": 8, "parity": "N", "stopbits": 1, "flow_control": "none"},
        source="tests/view",
        note=f"made from {path.stem} for the view tests; timing synthesised",
    )
    path.write_text(capture_text(header, events), encoding="utf-8")
    return path


def data_event_counts(path: Path) -> tuple[int, int]:
    """(rx events, tx events) of a capture, read with the project's reader."""
    c = read_capture(path)
    return sum(e.type == "rx" for e in c.events), sum(e.type == "tx" for e in c.events)


def nmea_sentences(payload: bytes) -> list[tuple[str, bool]]:
    """Every ``$...*HH`` sentence as (address, checksum ok), computed here without the parser."""
    out = []
    for m in re.finditer(rb"\$([A-Z0-9]+)([^*\r\n]*)\*([0-9A-Fa-f]{2})", payload):
        body = m.group(1) + m.group(2)
        xor = functools.reduce(lambda a, b: a ^ b, body, 0)
        out.append((m.group(1).decode(), xor == int(m.group(3), 16)))
    return out


def frame_list(data: dict[str, Any], payloads: dict[str, bytes]) -> list[dict[str, Any]]:
    """The page's frame columns as one dict per frame, its bytes read from ``payloads`` (rx/tx)."""
    fr = data["frames"]
    own = {i: (enc, text) for i, enc, text in fr["data"]}
    notes = dict(fr["notes"])
    out = []
    for i, t in enumerate(fr["t"]):
        d = fr["dir"][i]
        off, n = fr["off"][i], fr["len"][i]
        if i in own:
            enc, text = own[i]
            raw = bytes.fromhex(text) if enc == "h" else text.encode()
        else:
            raw = payloads["rx" if d == "r" else "tx"][off : off + n]
        valid = {"1": True, "0": False, "-": None, "e": "error"}[fr["valid"][i]]
        out.append(
            {
                "t": t,
                "dir": d,
                "offset": off,
                "kind": fr["kinds"][fr["kind"][i]],
                "valid": valid,
                "data": raw,
                "note": notes.get(i, ""),
            }
        )
    return out
