"""Declarative binary framing: a simulated sensor (sync words, garbage, torn frames, corrupted CRCs),
the length/checksum arithmetic against real protocols, TX round trips and chunking invariance."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from serial_mcp.core import checksums
from serial_mcp.core.decode import DecodedFrame, StreamDecoder
from serial_mcp.core.framing import Frame, FrameEvent, build_decoder, build_encoder
from serial_mcp.errors import InvalidArgument

GNSS_DATA = Path(__file__).resolve().parents[1] / "data" / "gnss"


def gnss_log(name: str) -> bytes:
    return (GNSS_DATA / name).read_bytes()  # in the repository (tests/data/SOURCES.md): missing is a failure


# The sensor: AA 55 LEN PAYLOAD CRC16/MODBUS-LE, CRC over AA 55 LEN PAYLOAD.
SENSOR: dict[str, Any] = {
    "type": "binary",
    "sync": "AA55",
    "length": {"offset": 2, "size": 1},
    "checksum": {"algorithm": "crc16_modbus", "endianness": "little"},
    "max_length": 64,
}


def sensor_frame(payload: bytes) -> bytes:
    """Built by hand, independently of the encoder."""
    body = b"\xaa\x55" + bytes([len(payload)]) + payload
    return body + checksums.compute("crc16_modbus", body).to_bytes(2, "little")


def frames_of(config: dict[str, Any], data: bytes, chunk: int | None = None) -> tuple[list[Frame], int]:
    decoder = build_decoder(config)
    events: list[FrameEvent] = []
    if chunk is None:
        events += decoder.feed(data)
    else:
        for i in range(0, len(data), chunk):
            events += decoder.feed(data[i : i + chunk])
    events += decoder.flush()
    assert all(isinstance(e, Frame) for e in events)  # binary framing never stops a read
    return [e for e in events if isinstance(e, Frame)], getattr(decoder, "bytes_skipped", 0)


def test_frames_between_garbage_are_found_and_the_garbage_counted() -> None:
    a, b = sensor_frame(b"\x01\x02\x03"), sensor_frame(b"hello")
    stream = b"\x00\xff\xaa" + a + b"junk" + b
    frames, skipped = frames_of(SENSOR, stream)
    assert [f.data for f in frames] == [b"\x01\x02\x03", b"hello"]
    assert all(f.checksum_valid for f in frames)
    assert frames[0].start == 3 and frames[0].end == 3 + len(a)
    assert stream[frames[1].start : frames[1].end] == b
    assert skipped == 3 + 4


def test_a_bad_crc_without_a_sync_inside_is_reported_invalid_and_the_next_frame_kept() -> None:
    bad = bytearray(sensor_frame(b"abcd"))
    bad[4] ^= 0x20  # b -> B
    good = sensor_frame(b"next")
    frames, skipped = frames_of(SENSOR, bytes(bad) + good)
    assert [(f.data, f.checksum_valid) for f in frames] == [(b"aBcd", False), (b"next", True)]
    assert skipped == 0


def test_a_corrupted_length_that_swallows_the_next_frame_does_not_lose_it() -> None:
    bad = bytearray(sensor_frame(b"xy"))
    bad[2] = 40  # the length now reaches far past the frame, over the next two
    good1, good2 = sensor_frame(b"one"), sensor_frame(b"two")
    stream = bytes(bad) + good1 + good2 + bytes(40)
    frames, skipped = frames_of(SENSOR, stream)
    assert [f.data for f in frames if f.checksum_valid] == [b"one", b"two"]
    assert [f.checksum_valid for f in frames] == [True, True]
    assert skipped == len(bad) + 40  # the corrupt frame and the trailing zeros belong to no frame


def test_an_impossible_length_resyncs_on_the_next_sync() -> None:
    stream = b"\xaa\x55\xfe" + sensor_frame(b"ok")  # 0xFE > max_length: not a frame
    frames, skipped = frames_of(SENSOR, stream)
    assert [f.data for f in frames] == [b"ok"]
    assert skipped == 3


def test_validate_drops_and_counts_bad_frames() -> None:
    bad = bytearray(sensor_frame(b"abcd"))
    bad[-1] ^= 1
    decoder = StreamDecoder(SENSOR, {"type": "raw", "validate": True})
    out = decoder.feed(b"zz" + bytes(bad) + sensor_frame(b"good"))
    assert [e.data if isinstance(e, DecodedFrame) else e for e in out] == [b"good"]
    assert decoder.frames_dropped == 1
    assert decoder.bytes_skipped == 2


def test_a_sync_split_across_feeds_is_found() -> None:
    frame = sensor_frame(b"split")
    for cut in range(1, len(frame)):
        decoder = build_decoder(SENSOR)
        events = decoder.feed(b"\x00" + frame[:cut]) + decoder.feed(frame[cut:])
        assert [e.data for e in events if isinstance(e, Frame)] == [b"split"]


def test_include_terminators_gives_the_raw_frame() -> None:
    frame = sensor_frame(b"raw")
    frames, _ = frames_of({**SENSOR, "include_terminators": True}, frame)
    assert frames[0].data == frame


def test_tx_builds_the_same_frame_and_round_trips() -> None:
    encoder = build_encoder({k: v for k, v in SENSOR.items()})
    for payload in (b"", b"\x00", b"hello", bytes(range(50))):
        assert encoder.encode(payload) == sensor_frame(payload)
        frames, _ = frames_of(SENSOR, encoder.encode(payload))
        assert frames[0].data == payload


def test_tx_refuses_a_payload_the_length_field_cannot_hold() -> None:
    with pytest.raises(InvalidArgument, match="max_length"):
        build_encoder(SENSOR).encode(bytes(100))


# --- real protocols, declared -------------------------------------------------------------------

UBX: dict[str, Any] = {
    "type": "binary",
    "sync": "B5 62",
    "length": {"offset": 4, "size": 2, "endianness": "little"},
    "header_length": 6,
    "checksum": {"algorithm": "ubx", "endianness": "little", "start": 2},
}
RTCM3: dict[str, Any] = {
    "type": "binary",
    "sync": "D3",
    "length": {"offset": 1, "size": 2, "mask": 1023},
    "header_length": 3,
    "checksum": {"algorithm": "crc24_lte_a"},
    "max_length": 1029,
}
# PMS5003-style: 42 4D, the length counts every byte after the length field (checksum included).
COUNTS_FROM: dict[str, Any] = {
    "type": "binary",
    "sync": "424D",
    "length": {"offset": 2, "size": 2, "from": 4},
    "checksum": {"algorithm": "crc16_xmodem"},
    "max_length": 64,
}


def test_ubx_declared_matches_a_published_frame() -> None:
    # u-blox CFG-MSG enabling NAV-PVT: B5 62 06 01 03 00 01 07 01 13 51 (u-blox interface description)
    wire = bytes.fromhex("B562060103000107011351")
    frames, _ = frames_of(UBX, wire)
    assert [(f.data, f.checksum_valid) for f in frames] == [(bytes.fromhex("0601010701"), True)]
    assert build_encoder(UBX).encode(bytes.fromhex("0601010701")) == wire


def test_rtcm3_declared_matches_the_builtin_on_real_data() -> None:
    data = gnss_log("rtcm3.2.log")
    declared, _ = frames_of({**RTCM3, "include_terminators": True}, data)
    builtin, _ = frames_of({"type": "rtcm3"}, data)
    assert [f.data for f in declared if f.checksum_valid] == [f.data for f in builtin if f.checksum_valid]
    assert len(builtin) == 192


def test_length_counting_from_an_offset() -> None:
    body = b"\x42\x4d\x00\x1c" + bytes(range(26))
    wire = body + checksums.compute("crc16_xmodem", body).to_bytes(2, "big")
    frames, _ = frames_of(COUNTS_FROM, b"\x00" + wire + wire)
    assert [f.checksum_valid for f in frames] == [True, True]
    assert frames[0].data == bytes(range(26))


def test_fixed_length_frames() -> None:
    # MH-Z19 CO2 sensor reply: FF 86 HH LL .. .. .. .. CS, CS = two's complement of bytes 1..7
    config = {"type": "binary", "sync": "FF86", "length": 9, "checksum": {"algorithm": "lrc", "start": 1}}
    body = bytes.fromhex("FF8601F4000000")
    wire = body + b"\x00" + bytes([-sum(body[1:]) & 0xFF])
    frames, _ = frames_of(config, wire)
    assert frames[0].checksum_valid is True and frames[0].data == bytes.fromhex("01F40000" + "0000")


def test_length_prefixed_is_expressible() -> None:
    lp = {"type": "length_prefixed", "prefix_size": 2, "header_offset": 1}
    binary = {"type": "binary", "sync": "7E", "length": {"offset": 1, "size": 2, "counts": "payload"}}
    payloads = [b"abc", b"", b"\x7e\x7e"]
    lp_wire = b"".join(build_encoder(lp).encode(b"\x7e" + p) for p in payloads)
    frames, _ = frames_of(binary, lp_wire)
    assert [f.data for f in frames] == payloads


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ({**SENSOR, "sync": "AZ"}, "hex bytes"),
        ({**SENSOR, "lenght": {}}, "Did you mean 'length'"),
        ({**SENSOR, "length": {"offset": 1}}, "inside the 2-byte sync"),
        ({**SENSOR, "length": {"offset": 2, "counts": "from"}}, "length.from"),
        ({**SENSOR, "checksum": {"algorithm": "crc16"}}, "crc16"),
        ({**SENSOR, "checksum": {"algorithm": "xor", "position": 3, "start": 0, "stop": 8}}, "covers"),
        ({**SENSOR, "length": {"offset": 2, "size": 3}}, "size"),
    ],
)
def test_bad_configs_name_the_problem(config: dict[str, Any], fragment: str) -> None:
    with pytest.raises(InvalidArgument, match=fragment):
        build_decoder(config)


# --- chunking invariance ------------------------------------------------------------------------


def noisy_stream(seed: int) -> bytes:
    rng = random.Random(seed)
    out = bytearray()
    for _ in range(30):
        kind = rng.random()
        frame: bytes | bytearray = sensor_frame(rng.randbytes(rng.randrange(0, 20)))
        if kind < 0.15:  # corrupt one byte anywhere
            frame = bytearray(frame)
            frame[rng.randrange(len(frame))] ^= 1 << rng.randrange(8)
        elif kind < 0.25:  # torn: only a prefix arrives
            frame = frame[: rng.randrange(1, len(frame))]
        out += frame
        if rng.random() < 0.3:
            out += rng.choice([b"\xaa", b"\x55", b"\xaa\x55", b"\x00\xaa\x55\x02"]) + rng.randbytes(3)
    return bytes(out)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), cuts=st.lists(st.integers(0, 2000), max_size=30))
@pytest.mark.slow
def test_any_chunking_gives_the_same_frames(seed: int, cuts: list[int]) -> None:
    data = noisy_stream(seed)
    whole, skipped_whole = frames_of(SENSOR, data)
    decoder = build_decoder(SENSOR)
    events: list[FrameEvent] = []
    prev = 0
    for cut in [*sorted({c % (len(data) + 1) for c in cuts}), len(data)]:
        events += decoder.feed(data[prev:cut])
        prev = cut
    events += decoder.flush()
    assert events == whole
    assert getattr(decoder, "bytes_skipped", 0) == skipped_whole
    # every byte is in exactly one frame or counted as skipped
    assert sum(f.end - f.start for f in whole) + skipped_whole == len(data)


LAYOUTS: list[dict[str, Any]] = [
    SENSOR,
    {**SENSOR, "checksum": {"algorithm": "crc16_xmodem", "endianness": "big", "start": 2}},
    {"type": "binary", "sync": "AA55", "length": {"offset": 2, "size": 1}},  # no checksum
    {
        "type": "binary",
        "sync": "FF",
        "length": 9,
        "checksum": {"algorithm": "sum8", "position": 1, "start": 2},  # a checksum inside the frame
    },
    {"type": "binary", "sync": ["AA55", "AA56"], "length": {"offset": 2, "size": 2, "endianness": "little"}},
    {**SENSOR, "include_terminators": True},
]


@pytest.mark.parametrize("config", LAYOUTS)
@settings(max_examples=60, deadline=None)
@given(data=st.binary(min_size=0, max_size=80), base=st.integers(0, 1 << 40))
def test_the_bound_frame_maker_gives_what_frame_gives(config: dict[str, Any], data: bytes, base: int) -> None:
    """``fast_frame`` (offsets bound once, the checksum inlined) agrees with the general ``frame``
    on any bytes, valid or not, wherever it is used."""
    layout = build_decoder(config).layout  # type: ignore[attr-defined]
    fast = layout.fast_frame
    if fast is None:
        return
    work = b"\x00garbage" + data + b"tail"
    s, e = 8, 8 + len(data)
    if e - s < layout.min_length:
        return
    assert fast(work, s, e, base) == layout.frame(work, s, e, base)


def test_the_usual_layout_has_a_bound_frame_maker() -> None:
    assert build_decoder(SENSOR).layout.fast_frame is not None  # type: ignore[attr-defined]
