"""Length-prefixed framing: sizes, endianness, header bytes, checksum and resync after garbage."""

from __future__ import annotations

import pytest

from serial_mcp.core.framing import Frame, FramingError, LengthPrefixedDecoder, build_decoder, build_encoder
from serial_mcp.errors import InvalidArgument


@pytest.mark.parametrize(
    ("size", "order", "prefix"),
    [
        (1, "big", b"\x03"),
        (2, "big", b"\x00\x03"),
        (2, "little", b"\x03\x00"),
        (4, "big", b"\x00\x00\x00\x03"),
        (4, "little", b"\x03\x00\x00\x00"),
    ],
)
def test_prefix_sizes_and_endianness(size: int, order: str, prefix: bytes) -> None:
    config = {"type": "length_prefixed", "prefix_size": size, "endianness": order}
    assert build_encoder(config).encode(b"abc") == prefix + b"abc"
    assert build_decoder(config).feed(prefix + b"abc" + prefix) == [Frame(b"abc", 0, size + 3)]


def test_frame_split_across_feeds_with_offset() -> None:
    decoder = LengthPrefixedDecoder(prefix_size=2, offset=100)
    assert decoder.feed(b"\x00") == []
    assert decoder.feed(b"\x05he") == []
    assert decoder.pending_start == 100
    assert decoder.feed(b"llo\x00\x00") == [Frame(b"hello", 100, 107), Frame(b"", 107, 109)]


def test_header_offset_keeps_header_in_data() -> None:
    config = {"type": "length_prefixed", "prefix_size": 1, "header_offset": 2}
    wire = build_encoder(config).encode(b"\xaa\x01PAYLOAD")
    assert wire == b"\xaa\x01\x07PAYLOAD"
    assert build_decoder(config).feed(wire) == [Frame(b"\xaa\x01PAYLOAD", 0, 10)]


def test_garbage_length_is_one_error_then_resync() -> None:
    decoder = LengthPrefixedDecoder(prefix_size=1, max_length=8)
    events = decoder.feed(b"\xff\xfe\xfd\x02ok\x01x")
    assert events == [
        FramingError(events[0].message, 0),  # type: ignore[union-attr]
        Frame(b"ok", 3, 6),
        Frame(b"x", 6, 8),
    ]
    assert "max_length 8" in events[0].message  # type: ignore[union-attr]


def test_a_second_bad_run_after_a_good_frame_is_reported_again() -> None:
    decoder = LengthPrefixedDecoder(prefix_size=1, max_length=8)
    events = decoder.feed(b"\xff\x01a\xf0\xf1\x01b")
    assert [type(e) for e in events] == [FramingError, Frame, FramingError, Frame]
    assert [e.offset for e in events if isinstance(e, FramingError)] == [0, 3]


def test_checksum_covers_header_prefix_and_payload() -> None:
    config = {
        "type": "length_prefixed",
        "prefix_size": 1,
        "header_offset": 1,
        "checksum": {"algorithm": "sum8"},
    }
    wire = build_encoder(config).encode(b"\x10abc")
    assert wire == b"\x10\x04abc" + bytes([sum(b"\x10\x04abc") & 0xFF])
    assert build_decoder(config).feed(wire) == [Frame(b"\x10abc", 0, 6, True)]
    corrupted = wire[:2] + b"x" + wire[3:]
    assert build_decoder(config).feed(corrupted) == [Frame(b"\x10xbc", 0, 6, False)]


def test_include_terminators_returns_the_raw_frame() -> None:
    config = {"type": "length_prefixed", "prefix_size": 2, "include_terminators": True}
    assert build_decoder(config).feed(b"\x00\x02hi") == [Frame(b"\x00\x02hi", 0, 4)]


def test_skip_empty() -> None:
    config = {"type": "length_prefixed", "prefix_size": 1, "skip_empty": True}
    assert build_decoder(config).feed(b"\x00\x00\x01a") == [Frame(b"a", 2, 4)]


def test_encoder_refuses_what_cannot_be_framed() -> None:
    with pytest.raises(InvalidArgument, match="above the limit of 255"):
        build_encoder({"type": "length_prefixed", "prefix_size": 1, "max_length": 100000}).encode(b"x" * 256)
    with pytest.raises(InvalidArgument, match="above the limit of 10"):
        build_encoder({"type": "length_prefixed", "max_length": 10}).encode(b"x" * 11)
    with pytest.raises(InvalidArgument, match="header_offset"):
        build_encoder({"type": "length_prefixed", "header_offset": 3}).encode(b"ab")


def test_truncated_frame_is_dropped_by_flush() -> None:
    decoder = LengthPrefixedDecoder(prefix_size=1)
    decoder.feed(b"\x05ab")
    assert decoder.flush() == []
    assert decoder.pending_start == 3
