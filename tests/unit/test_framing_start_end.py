"""Start/end framing against the published Modbus ASCII stream cases, plus NMEA-style markers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from serial_mcp.core.framing import Frame, FramingError, StartEndDecoder, build_decoder, build_encoder

MODBUS: dict[str, Any] = json.loads(
    (Path(__file__).parents[1] / "data" / "modbus_ascii" / "modbus_ascii_vectors.json").read_text()
)
MODBUS_RX = {"type": "start_end", "start": [":"], "end": "\r\n"}


@pytest.mark.parametrize("vector", MODBUS["valid_frames"], ids=lambda v: v["wire"].strip())
def test_valid_modbus_frames(vector: dict[str, Any]) -> None:
    wire = vector["wire"].encode()
    (frame,) = build_decoder(MODBUS_RX).feed(wire)
    assert frame == Frame(wire[1:-2], 0, len(wire))
    expected = f"{vector['address']:02X}{vector['pdu_hex']}{vector['lrc_hex']}"
    assert frame.data.decode().upper() == expected.upper()


@pytest.mark.parametrize("case", MODBUS["stream_cases"], ids=lambda c: c["note"])
@pytest.mark.parametrize("chunk", [None, 1, 5])
def test_modbus_stream_cases_frame_every_colon_to_crlf(case: dict[str, Any], chunk: int | None) -> None:
    wire = case["wire"].encode()
    decoder = build_decoder(MODBUS_RX)
    if chunk is None:
        events = decoder.feed(wire)
    else:
        events = [e for i in range(0, len(wire), chunk) for e in decoder.feed(wire[i : i + chunk])]
    # Independent expectation: every ':' ... '\r\n' span, garbage around it ignored.
    expected = []
    pos = 0
    while (s := wire.find(b":", pos)) >= 0 and (e := wire.find(b"\r\n", s)) >= 0:
        expected.append(wire[s + 1 : e])
        pos = e + 2
    assert [f.data for f in events if isinstance(f, Frame)] == expected
    # bytes left over: only a partial frame (starting with ':') is still pending
    rest = wire[decoder.pending_start :]
    assert rest == b"" or rest.startswith(b":")


def test_garbage_before_start_is_skipped_and_pending_start_moves() -> None:
    decoder = StartEndDecoder([b":"])
    assert decoder.feed(b"noise") == []
    assert decoder.pending_start == 5
    assert decoder.feed(b"abc:01\r") == []
    assert decoder.pending_start == 8
    assert decoder.feed(b"\n") == [Frame(b"01", 8, 13)]


def test_several_start_markers_and_longest_match() -> None:
    decoder = StartEndDecoder([b"$", b"!", b"$$"])
    assert decoder.feed(b"$GPGGA,1\r\n!AIVDM,2\r\n$$GNGSA,3\r\n") == [
        Frame(b"GPGGA,1", 0, 10),
        Frame(b"AIVDM,2", 10, 20),
        Frame(b"GNGSA,3", 20, 31),
    ]


def test_multibyte_start_marker_torn_across_chunks() -> None:
    decoder = StartEndDecoder([b"\x10\x02"], b"\x10\x03")
    assert decoder.feed(b"xx\x10") == []
    assert decoder.pending_start == 2
    assert decoder.feed(b"\x02data\x10") == []
    assert decoder.feed(b"\x03") == [Frame(b"data", 2, 10)]


def test_hex_markers_and_include_terminators() -> None:
    config = {"type": "start_end", "start": "02", "end": "03", "encoding": "hex", "include_terminators": True}
    assert build_decoder(config).feed(b"\x02hi\x03") == [Frame(b"\x02hi\x03", 0, 4)]


def test_nmea_style_checksum_option() -> None:
    config = {
        "type": "start_end",
        "start": ["$"],
        "checksum": {"algorithm": "xor", "format": "hex", "separator": "*"},
    }
    wire = b"$ECGLL,5119.881,N,00125.169,E,164326,A,D*52\r\n$GPGLL,1*00\r\n"  # first: sounder.log
    events = build_decoder(config).feed(wire)
    assert [(e.data, e.checksum_valid) for e in events if isinstance(e, Frame)] == [
        (b"ECGLL,5119.881,N,00125.169,E,164326,A,D", True),
        (b"GPGLL,1", False),
    ]
    assert build_encoder(config).encode(b"ECGLL,5119.881,N,00125.169,E,164326,A,D") == wire[:45]


def test_overlong_frame_is_skipped_through_its_end_marker() -> None:
    decoder = StartEndDecoder([b":"], max_length=4)
    events = decoder.feed(b":0102030405") + decoder.feed(b"06\r\n:01\r\n")
    assert isinstance(events[0], FramingError) and events[0].offset == 0
    assert events[1:] == [Frame(b"01", 15, 20)]


def test_encoder_uses_first_start_marker() -> None:
    encoder = build_encoder({"type": "start_end", "start": ["<", "["], "end": ">"})
    assert encoder.encode(b"PING") == b"<PING>"
