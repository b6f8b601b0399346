"""StreamDecoder: framing + parser + validate, drops counted, errors passed through, state kept."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from serial_mcp.core.decode import DecodedFrame, StreamDecoder, combine_validity
from serial_mcp.core.framing import FramingError, build_encoder

CRC_FRAMING = {"type": "delimiter", "delimiter": "\n", "checksum": {"algorithm": "crc8", "format": "hex"}}


def test_without_parser_frames_pass_through() -> None:
    decoder = StreamDecoder({"type": "line"}, None, offset=7)
    assert decoder.feed(b"a\nb") == [DecodedFrame(b"a", 7, 9)]
    assert decoder.pending_start == 9
    assert decoder.flush() == [DecodedFrame(b"b", 9, 10)]


def test_parser_fields_and_final_flag() -> None:
    decoder = StreamDecoder({"type": "line"}, {"type": "at_command"})
    (ok,) = decoder.feed(b"OK\r\n")
    assert isinstance(ok, DecodedFrame)
    assert ok.parsed == {"kind": "final", "status": "OK", "success": True} and ok.final


def test_framing_checksum_validate_drops_and_counts() -> None:
    encoder = build_encoder({k: v for k, v in CRC_FRAMING.items()})
    wire = encoder.encode(b"good") + b"bad00\n" + encoder.encode(b"also good")
    strict = StreamDecoder(CRC_FRAMING, {"type": "raw", "validate": True})
    assert [f.data for f in strict.feed(wire) if isinstance(f, DecodedFrame)] == [b"good", b"also good"]
    assert strict.frames_dropped == 1
    lenient = StreamDecoder(CRC_FRAMING, {"type": "raw"})
    frames = [f for f in lenient.feed(wire) if isinstance(f, DecodedFrame)]
    assert [f.checksum_valid for f in frames] == [True, False, True]
    assert lenient.frames_dropped == 0
    no_parser = StreamDecoder(CRC_FRAMING, None)
    assert [f.checksum_valid for f in no_parser.feed(wire) if isinstance(f, DecodedFrame)] == [
        True,
        False,
        True,
    ]


def test_parser_checksum_validate() -> None:
    wire = b"$GPGLL,1*00\r\n$SDDBT,7.7,f,2.3,M,1.3,F*05\r\n$STI,IC,error=4\r\n"
    decoder = StreamDecoder({"type": "line"}, {"type": "nmea", "validate": True})
    frames = decoder.feed(wire)
    assert [f.checksum_valid for f in frames if isinstance(f, DecodedFrame)] == [True, None]
    assert decoder.frames_dropped == 1


def test_framing_errors_pass_through_and_decoding_continues() -> None:
    decoder = StreamDecoder({"type": "slip"}, {"type": "raw"})
    events = decoder.feed(b"\xc0ok\xc0bad\xdb\x01\xc0fine\xc0")
    assert [type(e) for e in events] == [DecodedFrame, FramingError, DecodedFrame]
    assert decoder.frames_dropped == 0


def test_state_survives_between_feeds_and_reset() -> None:
    decoder = StreamDecoder({"type": "line"}, {"type": "json_lines"})
    assert decoder.feed(b'{"a": ') == []
    (frame,) = decoder.feed(b"1}\n")
    assert isinstance(frame, DecodedFrame) and frame.parsed == {"kind": "json", "value": {"a": 1}}
    decoder.feed(b"{partial")
    decoder.reset(1000)
    assert decoder.pending_start == 1000
    (after,) = decoder.feed(b"[2]\n")
    assert (
        isinstance(after, DecodedFrame)
        and after.start == 1000
        and after.parsed == {"kind": "json", "value": [2]}
    )


def test_combine_validity() -> None:
    assert combine_validity(None, None) is None
    assert combine_validity(True, None) is True
    assert combine_validity(None, True) is True
    assert combine_validity(True, False) is False
    assert combine_validity(False, True) is False


@settings(max_examples=200, deadline=None)
@given(
    data=st.lists(
        st.sampled_from([b"$GPGLL,1*00", b"$SDDBT,7.7,f,2.3,M,1.3,F*05", b"\r\n", b"\n", b"#c"]), max_size=40
    ).map(b"".join),
    cuts=st.lists(st.integers(0, 500), max_size=10),
)
@pytest.mark.slow
def test_chunking_does_not_change_decoded_frames_or_drops(data: bytes, cuts: list[int]) -> None:
    whole = StreamDecoder({"type": "line"}, {"type": "nmea", "validate": True})
    expected = whole.feed(data) + whole.flush()
    chunked = StreamDecoder({"type": "line"}, {"type": "nmea", "validate": True})
    got = []
    last = 0
    for cut in [*sorted({min(c, len(data)) for c in cuts}), len(data)]:
        got += chunked.feed(data[last:cut])
        last = cut
    assert got + chunked.flush() == expected
    assert chunked.frames_dropped == whole.frames_dropped
