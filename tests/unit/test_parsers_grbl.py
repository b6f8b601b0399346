"""grbl 1.1 responses."""

from __future__ import annotations

import pytest

from serial_mcp.core.parsers import GrblParser


@pytest.mark.parametrize(
    ("line", "fields", "final"),
    [
        (b"ok", {"kind": "ok"}, True),
        (b"error:20", {"kind": "error", "code": 20}, True),
        (b"ALARM:1", {"kind": "alarm", "code": 1}, False),
        (
            b"<Idle|MPos:0.000,0.000,0.000|FS:0,0|WCO:0.000,0.000,0.000>",
            {
                "kind": "status",
                "state": "Idle",
                "fields": {"MPos": [0.0, 0.0, 0.0], "FS": [0, 0], "WCO": [0.0, 0.0, 0.0]},
            },
            False,
        ),
        (
            b"<Hold:0|MPos:1.5,2,3|Bf:15,128|Pn:XZ>",
            {
                "kind": "status",
                "state": "Hold",
                "substate": 0,
                "fields": {"MPos": [1.5, 2, 3], "Bf": [15, 128], "Pn": ["XZ"]},
            },
            False,
        ),
        (b"[MSG:Caution: Unlocked]", {"kind": "message", "text": "Caution: Unlocked"}, False),
        (
            b"[GC:G0 G54 G17 G21 G90 G94 M5 M9 T0 F0 S0]",
            {"kind": "feedback", "tag": "GC", "value": "G0 G54 G17 G21 G90 G94 M5 M9 T0 F0 S0"},
            False,
        ),
        (b"$110=500.000", {"kind": "setting", "id": 110, "value": 500.0}, False),
        (
            b"Grbl 1.1h ['$' for help]",
            {"kind": "welcome", "version": "1.1h", "text": "Grbl 1.1h ['$' for help]"},
            False,
        ),
        (b"something else", {"kind": "text", "text": "something else"}, False),
    ],
)
def test_grbl_lines(line: bytes, fields: dict[str, object], final: bool) -> None:
    parsed = GrblParser().parse(line + b"\r\n")
    assert parsed.fields == fields
    assert parsed.final is final
