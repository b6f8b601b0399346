"""Modbus RTU framing, parsing and TX, cross-checked with pymodbus's own CRC and PDU encoders."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from serial_mcp.core.decode import DecodedFrame, StreamDecoder
from serial_mcp.core.framing import Frame, build_decoder, build_encoder
from serial_mcp.core.framing.modbus_rtu import ModbusRtuDecoder, silence_seconds
from serial_mcp.core.parsers import build_parser
from serial_mcp.core.presets import get_preset
from serial_mcp.errors import InvalidArgument

pymodbus_rtu = pytest.importorskip("pymodbus.framer.rtu")


def rtu(hex_adu: str) -> bytes:
    """address+PDU with the CRC pymodbus computes (low byte first on the wire)."""
    adu = bytes.fromhex(hex_adu)
    crc: int = pymodbus_rtu.FramerRTU.compute_CRC(adu)  # (an importorskip module is untyped)
    return adu + crc.to_bytes(2, "big")


def preset_decoder() -> StreamDecoder:
    preset = get_preset("modbus_rtu")
    return StreamDecoder(preset.get("rx_framing"), preset.get("rx_parser"))


def decode(data: bytes, chunk: int | None = None) -> tuple[list[DecodedFrame], StreamDecoder]:
    decoder = preset_decoder()
    step = chunk or len(data)
    events: list[Any] = []
    for i in range(0, len(data), step):
        events += decoder.feed(data[i : i + step])
    events += decoder.flush()
    return events, decoder


def test_the_textbook_frame() -> None:
    # Read 10 holding registers from slave 1 at 0: 01 03 00 00 00 0A C5 CD (Modbus over serial line guide)
    assert build_encoder({"type": "modbus_rtu"}).encode(bytes.fromhex("01030000000A")) == bytes.fromhex(
        "01030000000AC5CD"
    )
    assert rtu("01030000000A") == bytes.fromhex("01030000000AC5CD")


REQUEST_RESPONSE = [
    ("01030000000A", {"function_name": "read_holding_registers", "direction": "request", "quantity": 10}),
    ("010304000A0102", {"direction": "response", "registers": [10, 258]}),
    ("0104006B0003", {"function_name": "read_input_registers", "start": 0x6B, "quantity": 3}),
    ("11010205CD", {"direction": "response", "bits": [1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1, 1, 0, 0, 1, 1]}),
    ("110500ACFF00", {"start": 0xAC, "value": 0xFF00, "coil": True}),
    ("110600010003", {"function_name": "write_single_register", "start": 1, "value": 3}),
    ("1110000100020400010002", {"direction": "request", "registers": [1, 2]}),
    ("111000010002", {"direction": "response", "start": 1, "quantity": 2}),
    ("110F0013000A02CD01", {"direction": "request", "quantity": 10, "bits": [1, 0, 1, 1, 0, 0, 1, 1, 1, 0]}),
    ("1117000300060003000306000100020003", {"direction": "request", "write_quantity": 3}),
    ("11170C00FE0ACD00010003000D00FF", {"direction": "response", "registers": [254, 2765, 1, 3, 13, 255]}),
    ("018302", {"exception": True, "exception_code": 2, "exception_name": "illegal_data_address"}),
]


@pytest.mark.parametrize(("adu", "expected"), REQUEST_RESPONSE, ids=[a for a, _ in REQUEST_RESPONSE])
def test_each_function_is_framed_by_its_length_and_decoded(adu: str, expected: dict[str, Any]) -> None:
    frames, decoder = decode(rtu(adu) + rtu("01030000000A"))
    assert [f.data.hex().upper() for f in frames] == [adu, "01030000000A"]
    fields = frames[0].parsed or {}
    assert fields["address"] == int(adu[:2], 16) and fields["function"] == int(adu[2:4], 16)
    assert expected.items() <= fields.items()
    assert decoder.bytes_skipped == 0 and decoder.frames_dropped == 0


def test_a_stream_of_all_of_them_in_any_chunking() -> None:
    stream = b"".join(rtu(adu) for adu, _ in REQUEST_RESPONSE)
    whole, _ = decode(stream)
    assert len(whole) == len(REQUEST_RESPONSE)
    for chunk in (1, 2, 3, 5, 8):
        frames, _ = decode(stream, chunk)
        assert [(f.start, f.end, f.data) for f in frames] == [(f.start, f.end, f.data) for f in whole]


def test_a_crc_corrupted_reply_is_dropped_and_counted() -> None:
    bad = bytearray(rtu("010304000A0102"))
    bad[-1] ^= 0xFF
    frames, decoder = decode(bytes(bad) + rtu("010304000B0103"))
    assert [(f.parsed or {})["registers"] for f in frames] == [[11, 259]]
    assert decoder.frames_dropped == 1


def test_a_reply_split_across_reads() -> None:
    reply = rtu("010304000A0102")
    decoder = preset_decoder()
    assert decoder.feed(reply[:3]) == []
    out = decoder.feed(reply[3:])
    assert [(f.parsed or {})["registers"] if isinstance(f, DecodedFrame) else f for f in out] == [[10, 258]]


def test_unknown_function_ends_at_a_checking_crc_or_at_silence() -> None:
    frame = rtu("012B0E0100")  # function 43 (encapsulated interface) is not length-aware
    decoder = build_decoder({"type": "modbus_rtu"})
    assert decoder.feed(frame) == [Frame(frame[:-2], 0, len(frame), True)]
    silent = ModbusRtuDecoder()
    assert silent.feed(b"\x01\x41\x00") == []  # no CRC checks yet: wait
    assert silent.silence() == []  # too short to be a frame: skipped at the silence...
    assert silent.bytes_skipped == 2  # ...but the last byte may be an address whose function comes late
    assert silent.flush() == [] and silent.bytes_skipped == 3


def test_silence_threshold() -> None:
    assert silence_seconds(9600) == pytest.approx(3.5 * 11 / 9600)
    assert silence_seconds(115200) == 0.00175


def test_tx_refuses_a_too_short_adu() -> None:
    with pytest.raises(InvalidArgument, match="address and function"):
        build_encoder({"type": "modbus_rtu"}).encode(b"\x01")


def test_pdus_built_by_pymodbus_decode_alike() -> None:
    from pymodbus.pdu.register_message import ReadHoldingRegistersResponse

    pdu = ReadHoldingRegistersResponse(registers=[1, 2, 65535], dev_id=7)
    adu = bytes([7, pdu.function_code]) + pdu.encode()
    frames, _ = decode(build_encoder({"type": "modbus_rtu"}).encode(adu))
    assert (frames[0].parsed or {})["registers"] == [1, 2, 65535]


def test_modbus_ascii_parser_decodes_registers_too() -> None:
    parsed = build_parser({"type": "modbus_ascii"}).parse(b":010304000A0102EB\r\n")
    assert parsed.fields["registers"] == [10, 258] and parsed.fields["direction"] == "response"
    assert parsed.fields["data"] == "04000a0102"  # the raw data stays


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    order=st.permutations(range(len(REQUEST_RESPONSE))),
    flips=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 7)), max_size=3),
    cuts=st.lists(st.integers(0, 400), max_size=20),
)
@pytest.mark.slow
def test_any_chunking_of_a_corrupted_stream_gives_the_same_frames(
    order: list[int], flips: list[tuple[int, int]], cuts: list[int]
) -> None:
    data = bytearray(b"".join(rtu(REQUEST_RESPONSE[i][0]) for i in order))
    for at, bit in flips:
        if at < len(data):
            data[at] ^= 1 << bit
    whole = build_decoder({"type": "modbus_rtu"})
    expected = whole.feed(bytes(data)) + whole.flush()
    decoder = build_decoder({"type": "modbus_rtu"})
    events: list[Any] = []
    prev = 0
    for cut in [*sorted({c % (len(data) + 1) for c in cuts}), len(data)]:
        events += decoder.feed(bytes(data[prev:cut]))
        prev = cut
    events += decoder.flush()
    assert events == expected
    if not flips:
        assert len(events) == len(order) and all(isinstance(e, Frame) and e.checksum_valid for e in events)


def test_a_reply_ends_the_exchange_and_a_request_does_not() -> None:
    frames, _ = decode(rtu("01030000000A") + rtu("010304000A0102") + rtu("018302"))
    assert [f.final for f in frames] == [False, True, True]


def test_silence_ends_an_unknown_functions_frame_in_the_pipeline() -> None:
    decoder = preset_decoder()
    frame = rtu("014100")  # function 0x41: no known length; its CRC checks at 5 bytes
    assert decoder.feed(frame[:3]) == []
    assert decoder.silence() == []  # a partial frame at a silence is given up...
    assert decoder.bytes_skipped == 2  # ...and counted (its last byte might be an address: it waits)
    out = decoder.feed(frame)
    assert [e.data if isinstance(e, DecodedFrame) else e for e in out] == [frame[:-2]]
    assert decoder.bytes_skipped == 3  # the frame after the silence checks: that byte was no frame


# --- issue 26.8: a reply whose length is known is one frame whatever the gaps between its pieces ---


def feed_timed(decoder: StreamDecoder, pieces: list[tuple[float, bytes]], silence_s: float) -> list[Any]:
    """Feed ``(t, bytes)`` pieces as the reader does: when the line has been quiet for ``silence_s``
    before the next piece arrives, the decoder is told of the silence first (no real sleeps)."""
    events: list[Any] = []
    last: float | None = None
    for t, data in pieces:
        if last is not None and t - last >= silence_s:
            events += decoder.silence()
        events += decoder.feed(data)
        last = t
    return events + decoder.silence()


@pytest.mark.parametrize("baud", [9600, 115200])
@pytest.mark.parametrize("cuts", [(3, 9), (1, 2), (2, 20), (7, 8)])
def test_a_reply_torn_into_three_writes_5_ms_apart_is_one_frame(baud: int, cuts: tuple[int, int]) -> None:
    # read 10 holding registers: the reply has its length in its byte count (5 + 20 bytes)
    reply = rtu("0103140001000200030004000500060007000800090010")
    a, b = cuts
    pieces = [(0.000, reply[:a]), (0.005, reply[a:b]), (0.010, reply[b:])]
    silence = max(silence_seconds(baud), 0.005)  # as serial/reader.py waits (MIN_SILENCE_S)
    decoder = preset_decoder()
    events = feed_timed(decoder, pieces, silence)
    assert [e.data for e in events] == [reply[:-2]]
    assert (events[0].parsed or {})["registers"] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 16]
    assert decoder.bytes_skipped == 0 and decoder.frames_dropped == 0


def test_a_torn_request_then_a_whole_reply_after_the_silence() -> None:
    # a request whose tail never came: the reply behind the silence is not swallowed into it
    request, reply = rtu("01030000000A"), rtu("010304000A0102")
    decoder = preset_decoder()
    events = feed_timed(decoder, [(0.0, request[:5]), (0.050, reply)], 0.005)
    assert [e.data for e in events] == [reply[:-2]]
    assert decoder.bytes_skipped == 5


def test_silence_still_ends_a_frame_whose_length_cannot_be_known() -> None:
    frame = rtu("01410203")  # function 0x41: user-defined, no length rule
    decoder = preset_decoder()
    events = feed_timed(decoder, [(0.0, frame[:3]), (0.001, frame[3:]), (0.050, rtu("0106000100FF"))], 0.005)
    assert [e.data for e in events] == [frame[:-2], bytes.fromhex("0106000100FF")]


# --- issue 28: the resync of unknown-function candidates asks an index, not 253 CRCs per start ---


@settings(max_examples=200, deadline=None)
@given(
    noise=st.binary(min_size=0, max_size=1200),
    frames=st.lists(st.tuples(st.integers(0, 1200), st.binary(min_size=2, max_size=60)), max_size=8),
)
@pytest.mark.slow  # over a second: the full suite runs it, the fast lane does not
def test_the_end_index_finds_exactly_the_lengths_whose_crc_checks(
    noise: bytes, frames: list[tuple[int, bytes]]
) -> None:
    from serial_mcp.core.framing.modbus_rtu import MAX_ADU, modbus_rtu_encode
    from serial_mcp.core.framing.modbus_rtu_probe import EndIndex

    work = bytearray(noise)
    for at, adu in frames:  # real frames planted in the noise, so there are ends to find
        work[at:at] = modbus_rtu_encode(adu)
    data = bytes(work)
    index = EndIndex(data)
    for s in range(len(data)):
        top = min(len(data) - s, MAX_ADU)
        if top < 4:
            continue
        brute = next(
            (
                e
                for e in range(s + 4, s + top + 1)
                if pymodbus_rtu.FramerRTU.compute_CRC(data[s : e - 2])
                == int.from_bytes(data[e - 2 : e], "big")
            ),
            None,
        )
        assert index.first_end(s, s + 4, s + top) == brute, s


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    order=st.lists(st.integers(0, len(REQUEST_RESPONSE) - 1), min_size=1, max_size=12),
    cuts=st.lists(st.integers(0, 400), max_size=12),
    quiet=st.lists(st.booleans(), min_size=12, max_size=12),
)
@pytest.mark.slow  # over a second: the full suite runs it, the fast lane does not
def test_silences_anywhere_inside_length_aware_frames_lose_nothing(
    order: list[int], cuts: list[int], quiet: list[bool]
) -> None:
    # every piece boundary may be an adapter's latency gap (a silence to the reader) or not
    data = b"".join(rtu(REQUEST_RESPONSE[i][0]) for i in order)
    decoder = ModbusRtuDecoder()
    events: list[Any] = []
    prev = 0
    for n, cut in enumerate(sorted({c % (len(data) + 1) for c in cuts})):
        events += decoder.feed(data[prev:cut])
        prev = cut
        if quiet[n]:
            events += decoder.silence()
    events += decoder.feed(data[prev:]) + decoder.silence()
    assert [e.data.hex().upper() for e in events] == [REQUEST_RESPONSE[i][0] for i in order]
    assert all(e.checksum_valid for e in events) and decoder.bytes_skipped == 0
