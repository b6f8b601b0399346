"""Property tests for every framing codec: chunking invariance and encode -> decode round trips."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from serial_mcp.core.framing import (
    ChecksumSpec,
    Frame,
    FrameDecoder,
    FrameEvent,
    build_decoder,
    build_encoder,
)

pytestmark = pytest.mark.slow

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PER_CONFIG = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Bytes that matter to some codec, mixed with ordinary ones, so every code path is reached.
TOKENS = [
    b"\r",
    b"\n",
    b"\r\n",
    b"a",
    b"b",
    b"$",
    b"!",
    b":",
    b"*",
    b"|",
    b"\x00",
    b"\x01",
    b"\x02",
    b"\xc0",
    b"\xdb",
    b"\xdc",
    b"\xdd",
    b"\xff",
    b"zz",
    b"0A",
]
streams = st.lists(st.sampled_from(TOKENS), max_size=80).map(b"".join) | st.binary(max_size=200)

RX_CONFIGS: list[dict[str, Any]] = [
    *(
        {"type": "line", "ending": e, "include_terminators": i, "skip_empty": s, "max_length": m}
        for e in ("auto", "lf", "cr", "crlf")
        for i in (False, True)
        for s in (False, True)
        for m in (4, 4096)
    ),
    *(
        {"type": "delimiter", "delimiter": d, "include_terminators": i, "max_length": m}
        for d in ("|", "zz", "aba", "\r\n")
        for i in (False, True)
        for m in (3, 4096)
    ),
    {
        "type": "delimiter",
        "delimiter": "|",
        "checksum": {"algorithm": "xor", "format": "hex", "separator": "*"},
    },
    {"type": "delimiter", "delimiter": "0d0a", "encoding": "hex", "checksum": {"algorithm": "crc16_modbus"}},
    *(
        {
            "type": "start_end",
            "start": s,
            "end": e,
            "include_terminators": i,
            "skip_empty": i,
            "max_length": m,
        }
        for s in (["$"], ["$", "!"], ["ab", "a"], ["ab"], ["$$", "!"])
        for e in ("\r\n", "*", "zz")
        for i in (False, True)
        for m in (3, 4096)
    ),
    {
        "type": "start_end",
        "start": ["$", "!"],
        "checksum": {"algorithm": "xor", "format": "hex", "separator": "*"},
    },
    *(
        {
            "type": "length_prefixed",
            "prefix_size": p,
            "endianness": e,
            "header_offset": h,
            "max_length": m,
            "include_terminators": i,
        }
        for p in (1, 2)
        for e in ("big", "little")
        for h in (0, 2)
        for m in (5, 300)
        for i in (False, True)
    ),
    {"type": "length_prefixed", "prefix_size": 1, "checksum": {"algorithm": "crc8"}, "skip_empty": True},
    *({"type": "slip", "include_terminators": i, "max_length": m} for i in (False, True) for m in (3, 4096)),
    *(
        {"type": "cobs", "include_terminators": i, "skip_empty": i, "max_length": m}
        for i in (False, True)
        for m in (3, 4096)
    ),
]


def config_id(config: dict[str, Any]) -> str:
    return "-".join(f"{k}={v}" for k, v in config.items())


per_config = pytest.mark.parametrize("config", RX_CONFIGS, ids=config_id)


def feed_chunks(decoder: FrameDecoder, data: bytes, cuts: list[int]) -> list[FrameEvent]:
    """Feed ``data`` split at ``cuts`` (positions, any order, duplicates allowed)."""
    events: list[FrameEvent] = []
    last = 0
    for cut in [*sorted({min(c, len(data)) for c in cuts}), len(data)]:
        events += decoder.feed(data[last:cut])
        last = cut
    return events


@per_config
@PER_CONFIG
@given(data=streams, cuts=st.lists(st.integers(0, 250), max_size=20), offset=st.integers(0, 10**12))
def test_any_chunking_gives_the_same_events(
    config: dict[str, Any], data: bytes, cuts: list[int], offset: int
) -> None:
    whole = build_decoder(config, offset)
    expected = whole.feed(data)
    chunked = build_decoder(config, offset)
    assert feed_chunks(chunked, data, cuts) == expected
    assert chunked.pending_start == whole.pending_start
    assert chunked.flush() == whole.flush()
    assert chunked.pending_start == whole.pending_start == offset + len(data)


@per_config
@PER_CONFIG
@given(data=streams)
def test_byte_at_a_time_gives_the_same_events(config: dict[str, Any], data: bytes) -> None:
    expected = build_decoder(config).feed(data)
    single = build_decoder(config)
    assert [e for i in range(len(data)) for e in single.feed(data[i : i + 1])] == expected


@per_config
@PER_CONFIG
@given(data=streams)
def test_offsets_are_ordered_and_inside_the_stream(config: dict[str, Any], data: bytes) -> None:
    decoder = build_decoder(config, 100)
    events = decoder.feed(data) + decoder.flush()
    position = 100
    for event in events:
        if isinstance(event, Frame):
            assert position <= event.start < event.end <= 100 + len(data)
            if config.get("include_terminators"):
                assert event.data == data[event.start - 100 : event.end - 100]
            position = event.end
        else:
            assert position <= event.offset <= 100 + len(data)
            position = event.offset


@per_config
@PER_CONFIG
@given(before=streams, after=streams)
def test_reset_forgets_partial_state(config: dict[str, Any], before: bytes, after: bytes) -> None:
    decoder = build_decoder(config)
    decoder.feed(before)
    decoder.reset(5000)
    assert decoder.pending_start == 5000
    assert decoder.feed(after) == build_decoder(config, 5000).feed(after)


# --- round trips ------------------------------------------------------------------------------------


def roundtrip(rx: dict[str, Any], tx: dict[str, Any], payloads: list[bytes]) -> list[Frame]:
    encoder = build_encoder(tx)
    wire = b"".join(encoder.encode(p) for p in payloads)
    events = build_decoder(rx).feed(wire)
    assert all(isinstance(e, Frame) for e in events)
    return [e for e in events if isinstance(e, Frame)]


def clean(payloads: list[bytes], ok: Callable[[bytes], bool]) -> list[bytes]:
    assume(all(ok(p) for p in payloads))
    return payloads


payload_lists = st.lists(st.binary(max_size=300), max_size=8)
text_payloads = st.lists(st.sampled_from([*TOKENS, b"hello", b"\x00x"]), max_size=6).map(b"".join)


@SETTINGS
@given(
    payloads=st.lists(text_payloads, max_size=8),
    ending=st.sampled_from(["lf", "cr", "crlf"]),
    rx_ending=st.sampled_from(["same", "auto"]),
)
def test_line_roundtrip(payloads: list[bytes], ending: str, rx_ending: str) -> None:
    payloads = [p.replace(b"\r", b"").replace(b"\n", b"") for p in payloads]
    rx = {"type": "line", "ending": ending if rx_ending == "same" else "auto"}
    frames = roundtrip(rx, {"type": "line", "ending": ending}, payloads)
    assert [f.data for f in frames] == payloads


@SETTINGS
@given(
    payloads=st.lists(text_payloads, max_size=8),
    delimiter=st.sampled_from(["|", "zz", "aba", "\r\n"]),
    checksum=st.sampled_from(
        [
            None,
            {"algorithm": "xor", "format": "hex", "separator": "*"},
            {"algorithm": "crc16_ccitt_false", "format": "hex"},
        ]
    ),
)
def test_delimiter_roundtrip(payloads: list[bytes], delimiter: str, checksum: dict[str, Any] | None) -> None:
    sep = delimiter.encode()
    spec = build_checksum(checksum)
    clean(
        payloads,
        lambda p: ((spec.append(p) if spec else p) + sep).find(sep) == len(spec.append(p) if spec else p),
    )
    config: dict[str, Any] = {"type": "delimiter", "delimiter": delimiter}
    if checksum:
        config["checksum"] = checksum
    frames = roundtrip(config, config, payloads)
    assert [f.data for f in frames] == payloads
    assert all(f.checksum_valid is (True if checksum else None) for f in frames)


def build_checksum(raw: dict[str, Any] | None) -> ChecksumSpec | None:
    from serial_mcp.core.framing.checksum import parse_checksum

    return parse_checksum(raw, "checksum") if raw else None


@SETTINGS
@given(
    payloads=st.lists(text_payloads, max_size=8),
    end=st.sampled_from(["\r\n", "*", "zz"]),
    starts=st.sampled_from([["$"], ["$", "!"], ["!", "$"]]),
)
def test_start_end_roundtrip(payloads: list[bytes], end: str, starts: list[str]) -> None:
    e = end.encode()
    clean(payloads, lambda p: (p + e).find(e) == len(p))
    config = {"type": "start_end", "start": starts, "end": end}
    frames = roundtrip(config, config, payloads)
    assert [f.data for f in frames] == payloads


@SETTINGS
@given(
    payloads=payload_lists,
    prefix=st.sampled_from([1, 2, 4]),
    endianness=st.sampled_from(["big", "little"]),
    header=st.integers(0, 3),
    checksum=st.sampled_from([None, {"algorithm": "crc16_modbus", "endianness": "little"}]),
)
def test_length_prefixed_roundtrip(
    payloads: list[bytes], prefix: int, endianness: str, header: int, checksum: dict[str, Any] | None
) -> None:
    payloads = [p for p in payloads if len(p) >= header and len(p) < 200]
    config: dict[str, Any] = {
        "type": "length_prefixed",
        "prefix_size": prefix,
        "endianness": endianness,
        "header_offset": header,
    }
    if checksum:
        config["checksum"] = checksum
    frames = roundtrip(config, config, payloads)
    assert [f.data for f in frames] == payloads
    assert all(f.checksum_valid is (True if checksum else None) for f in frames)


@SETTINGS
@given(payloads=payload_lists)
def test_slip_roundtrip(payloads: list[bytes]) -> None:
    frames = roundtrip({"type": "slip"}, {"type": "slip"}, payloads)
    assert [f.data for f in frames] == [p for p in payloads if p]  # RFC 1055: empty packets are ignored


@SETTINGS
@given(
    payloads=st.lists(
        st.binary(max_size=1200) | st.sampled_from([b"\x01" * 254, b"\x01" * 255, b"\x00" * 300]), max_size=6
    )
)
def test_cobs_roundtrip(payloads: list[bytes]) -> None:
    frames = roundtrip({"type": "cobs"}, {"type": "cobs"}, payloads)
    assert [f.data for f in frames] == payloads


@SETTINGS
@given(
    payloads=payload_lists,
    cuts=st.lists(st.integers(0, 3000), max_size=30),
    codec=st.sampled_from(["slip", "cobs"]),
)
def test_binary_codecs_roundtrip_under_chunking(payloads: list[bytes], cuts: list[int], codec: str) -> None:
    encoder = build_encoder({"type": codec})
    wire = b"".join(encoder.encode(p) for p in payloads)
    frames = feed_chunks(build_decoder({"type": codec}), wire, cuts)
    expected = [p for p in payloads if p] if codec == "slip" else payloads
    assert [f.data for f in frames if isinstance(f, Frame)] == expected
