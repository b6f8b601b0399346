"""JSON Lines parser on gpsd's real mixed stream (NMEA lines between JSON objects)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from serial_mcp.core.decode import DecodedFrame, StreamDecoder
from serial_mcp.core.parsers import JsonLinesParser
from serial_mcp.core.presets import get_preset

MIXED = Path(__file__).parents[1] / "data" / "jsonlines" / "garmin48.log.chk"


@pytest.mark.parametrize("preset_name", ["json_lines", "ndjson"])
def test_mixed_stream_json_and_raw_lines(preset_name: str) -> None:
    data = MIXED.read_bytes()
    preset = get_preset(preset_name)
    decoder = StreamDecoder(preset.get("rx_framing"), preset.get("rx_parser"))
    frames = [e for e in decoder.feed(data) if isinstance(e, DecodedFrame)]
    lines = [line for line in data.replace(b"\r\n", b"\n").split(b"\n") if line.strip()]
    assert len(frames) == len(lines)
    json_lines = [line for line in lines if line.startswith(b"{")]
    parsed_json = [f.parsed["value"] for f in frames if f.parsed and f.parsed["kind"] == "json"]
    assert parsed_json == [json.loads(line) for line in json_lines]
    raw = [f.parsed["text"] for f in frames if f.parsed and f.parsed["kind"] == "raw"]
    assert raw == [line.decode() for line in lines if not line.startswith(b"{")]
    assert all(r.startswith("$") for r in raw)
    assert {v["class"] for v in parsed_json} >= {"TPV", "SKY"}


@pytest.mark.parametrize(
    ("payload", "fields"),
    [
        (b'{"a": 1}', {"kind": "json", "value": {"a": 1}}),
        (b"[1, 2]\r\n", {"kind": "json", "value": [1, 2]}),
        (b"42", {"kind": "json", "value": 42}),
        (b'"text"', {"kind": "json", "value": "text"}),
        (b"null", {"kind": "json", "value": None}),
        (b"NaN", {"kind": "raw", "text": "NaN"}),
        (b'{"a": Infinity}', {"kind": "raw", "text": '{"a": Infinity}'}),
        (b"{broken", {"kind": "raw", "text": "{broken"}),
        (b"", {"kind": "raw", "text": ""}),
        (b"\xff\xfe{}", {"kind": "raw", "text": "\ufffd\ufffd{}"}),
    ],
)
def test_values_and_non_json(payload: bytes, fields: dict[str, object]) -> None:
    parsed = JsonLinesParser().parse(payload)
    assert parsed.fields == fields
    json.dumps(parsed.fields, allow_nan=False)


def test_deeply_nested_json_does_not_raise() -> None:
    parsed = JsonLinesParser().parse(b"[" * 100000 + b"]" * 100000)
    assert parsed.fields["kind"] == "raw"
