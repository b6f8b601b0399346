"""The nmea0183 pipeline's fast route (``NmeaLineDecoder.feed_lines`` + ``parsers.nmea.parse_lines``)
gives what the general route gives: the nmea framing's frames, each parsed by ``NmeaParser``, with bad
checksums dropped and counted — for any stream (good, bad and odd sentences, binary garbage, lone CRs,
UTF-8 comments, over-long lines) in any chunking."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from serial_mcp.core.decode import DecodedFrame, StreamDecoder, combine_validity
from serial_mcp.core.framing import Frame
from serial_mcp.core.framing.gnss import NmeaLineDecoder
from serial_mcp.core.parsers.nmea import DecodedSlots, NmeaParser

DATA = Path(__file__).resolve().parents[1] / "data" / "nmea"
LOG_LINES = sorted({line for p in sorted(DATA.glob("*")) for line in p.read_bytes().splitlines() if line})


def _general_route(chunks: list[bytes], validate: bool, max_length: int) -> tuple[list[Any], tuple[int, ...]]:
    """Frame by frame: the nmea framing's ``feed``, then ``NmeaParser.parse`` per frame."""
    framing = NmeaLineDecoder(max_length=max_length)
    parser = NmeaParser(validate)
    out: list[Any] = []
    dropped = 0
    for events in [framing.feed(c) for c in chunks] + [framing.flush()]:
        for event in events:
            if not isinstance(event, Frame):
                out.append(event)
                continue
            parsed = parser.parse(event.data)
            valid = combine_validity(event.checksum_valid, parsed.checksum_valid)
            if validate and valid is False:
                dropped += 1
                continue
            out.append(DecodedFrame(event.data, event.start, event.end, valid, parsed.fields, parsed.final))
    return out, (dropped, framing.bytes_skipped, framing.pending_start)


def _pipeline(chunks: list[bytes], validate: bool, max_length: int) -> tuple[list[Any], tuple[int, ...]]:
    decoder = StreamDecoder(
        {"type": "nmea", "max_length": max_length}, {"type": "nmea", "validate": validate}
    )
    out: list[Any] = []
    for chunk in chunks:
        out += decoder.feed(chunk)
    out += decoder.flush()
    return out, (decoder.frames_dropped, decoder.bytes_skipped, decoder.pending_start)


def _key_orders(events: list[Any]) -> list[list[str] | None]:
    return [list(e.parsed) if isinstance(e, DecodedFrame) and e.parsed is not None else None for e in events]


def _same(chunks: list[bytes], validate: bool = True, max_length: int = 1 << 20) -> list[Any]:
    fast, fast_counts = _pipeline(chunks, validate, max_length)
    general, general_counts = _general_route(chunks, validate, max_length)
    assert fast == general
    assert _key_orders(fast) == _key_orders(general)
    assert fast_counts == general_counts
    return fast


def _chunked(stream: bytes, size: int) -> list[bytes]:
    return [stream[i : i + size] for i in range(0, len(stream), size)]


def _flip_checksum(line: bytes) -> bytes:
    return line[:-1] + (b"0" if line[-1:] != b"0" else b"1")


ODD_LINES = [
    b"$$GPGGA,1,2*55",  # ST Teseo's doubled dollar
    b"$$GPGGA,1,2*45",
    b"$$$GPGGA,1,2*55",
    b"$$*00",
    b"!*00",
    b"!$GPGGA,1,2*50",
    b"!AIVDM,1,1,,A,13aEOK?P00PD2wVMdLDRhgvL289?,0*27",  # a bad checksum
    b"!AIVDO,1,1,,,13aEOK?P00PD2wVMdLDRhgvL289?,x*00",
    b"$GPGGA,1,2*5a",  # lower-case digits
    b"$GPGGA,1,2",  # no checksum
    b"$GPGGA,1*2*45",  # two stars
    b"$GPGGA,1,2*4",  # a truncated checksum
    b"$GPGGA,1,2*ZZ",  # not hex
    b"$*00",
    b"$",
    b"*00",
    b"!AIVDM,1,1,,A,13aEOK?P00PD2wVMdLDRhgvL289?,0*26,1234567890",  # receiver metadata after the checksum
    b"!AIVDM,1,1,,A,13aEOK?P00PD2wVMdLDRhgvL289?,0*26",
    b"# comment \xc2\xb0 with a degree sign",
    b"\t$GPGGA,1,2*55 ",  # whitespace around
    b"PGRMT,,*00",
    b"$PGRME,15.0,M,45.0,M,25.0,M*1C",
]
PIECES = st.one_of(
    st.sampled_from(LOG_LINES),
    st.sampled_from(LOG_LINES).map(_flip_checksum),
    st.sampled_from(ODD_LINES),
    st.binary(max_size=12),  # garbage: control bytes, high bytes, stray CR/LF, $ and !
    st.sampled_from([b"$", b"!", b"\r", b"\xc2", b"\xb0", b"\x00"]),
)
ENDINGS = st.sampled_from([b"\r\n", b"\n", b"\r\n", b"\n", b"\r", b""])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(PIECES, ENDINGS), max_size=40),
    st.lists(st.integers(1, 200), min_size=1, max_size=8),
    st.booleans(),
    st.sampled_from([40, 90, 1 << 20]),
)
@pytest.mark.slow
def test_any_stream_in_any_chunking_decodes_as_the_general_route(
    parts: list[tuple[bytes, bytes]], sizes: list[int], validate: bool, max_length: int
) -> None:
    stream = b"".join(piece + ending for piece, ending in parts)
    chunks, i, k = [], 0, 0
    while i < len(stream):
        chunks.append(stream[i : i + sizes[k % len(sizes)]])
        i += sizes[k % len(sizes)]
        k += 1
    _same(chunks, validate, max_length)


@pytest.mark.slow
def test_the_real_logs_take_the_fast_route_and_decode_as_the_general_route() -> None:
    stream = b"".join(p.read_bytes() for p in sorted(DATA.glob("*")))
    framing = NmeaLineDecoder()
    taken = 0
    chunks = _chunked(stream, 4096)
    for chunk in chunks:
        if framing.feed_lines(chunk) is not None:
            taken += 1
        else:
            framing.feed(chunk)
    assert taken >= 0.9 * len(chunks)  # UTF-8 comments and CRLF/LF mixes stay on it
    for size in (1, 37, 4096, 65536, len(stream)):
        frames = _same(_chunked(stream, size))
        assert len(frames) > 8000


def test_the_fast_route_declines_what_needs_the_general_route_and_consumes_nothing() -> None:
    good = b"$GPGGA,1,2*55\r\n"
    for chunk in (
        b"\xb5\x62\x01" + good,  # binary bytes before a sentence: resync
        b"$GPGGA,1,2*55\r" + good,  # a lone CR
        good + b"$GPGGA,1",  # fine: only the complete line is judged ...
        b"$GPGGA,1,2*55",  # no LF: nothing to hand over
        good[:-1],  # ends in CR: its LF may follow
        good + b"\xc2\n",  # a line that is not UTF-8 text
    ):
        framing = NmeaLineDecoder()
        route = framing.feed_lines(chunk)
        if chunk == good + b"$GPGGA,1":
            assert route == ([b"$GPGGA,1,2*55\r"], 0, [])
            assert framing.pending_start == len(good) and framing.tail() == b"$GPGGA,1"
            continue
        assert route is None, chunk
        assert framing.pending_start == 0 and framing.tail() == b""
    assert NmeaLineDecoder(max_length=8).feed_lines(good) is None  # the too-long line's error comes in place
    assert NmeaLineDecoder(include_terminators=True).feed_lines(good) is None
    assert NmeaLineDecoder(skip_empty=False).feed_lines(good) is None


def test_a_crlf_torn_after_its_cr_is_finished_by_the_general_route() -> None:
    """The first chunk ends a line at its CR (general route, which then skips one LF): the fast
    route must not take the next chunk and leave that skip pending for a later LF."""
    chunks = [b"$GPGGA,1,2*55\r", b"\n$GPGGA,1,2*55\r\n$GPG", b"\nGA\x01\n$GPGGA,1,2*55\n"]
    events = _same(chunks)
    assert [e.data for e in events] == [b"$GPGGA,1,2*55", b"$GPGGA,1,2*55", b"$GPG", b"$GPGGA,1,2*55"]


def test_an_overlong_tail_is_reported_after_the_lines_before_it() -> None:
    chunks = [b"$GPGGA,1,2*55\r\n" + b"x" * 60, b"y" * 60 + b"\n$GPGGA,1,2*55\n"]
    events = _same(chunks, max_length=100)
    assert [type(e).__name__ for e in events] == ["DecodedFrame", "FramingError", "DecodedFrame"]


def test_a_bad_checksum_is_dropped_and_counted_on_the_fast_route() -> None:
    decoder = StreamDecoder({"type": "nmea"}, {"type": "nmea", "validate": True})
    events = decoder.feed(b"$GPGGA,1,2*55\r\n$GPGGA,1,2*56\r\n$GPGGA,1,2\r\n")
    assert [(e.data, e.checksum_valid) for e in events if isinstance(e, DecodedFrame)] == [
        (b"$GPGGA,1,2*55", True),
        (b"$GPGGA,1,2", None),
    ]
    assert decoder.frames_dropped == 1


def test_parse_lines_sets_every_field_of_a_decoded_frame() -> None:
    """parse_lines builds frames without __init__: a field added to DecodedFrame must be added there."""
    assert [f.name for f in dataclasses.fields(DecodedFrame)] == list(DecodedSlots.__annotations__)
