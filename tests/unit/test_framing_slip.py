"""SLIP (RFC 1055) against the published SlipLib vectors and real ESP ROM-bootloader frames."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from serial_mcp.core.framing import (
    Frame,
    FrameDecodeError,
    FramingError,
    SlipDecoder,
    build_decoder,
    build_encoder,
    slip,
)

VECTORS: dict[str, Any] = json.loads(
    (Path(__file__).parents[1] / "data" / "slip_cobs" / "slip_cobs_vectors.json").read_text()
)["slip"]


def test_constants_match_rfc1055() -> None:
    constants = VECTORS["constants"]
    assert tuple(bytes.fromhex(constants[k]) for k in ("END", "ESC", "ESC_END", "ESC_ESC")) == (
        slip.END,
        slip.ESC,
        slip.ESC_END,
        slip.ESC_ESC,
    )


@pytest.mark.parametrize("vector", VECTORS["encode_vectors"], ids=lambda v: v["message_hex"] or "empty")
def test_encode_vectors(vector: dict[str, str]) -> None:
    message, packet = bytes.fromhex(vector["message_hex"]), bytes.fromhex(vector["packet_hex"])
    assert slip.encode(message) == packet
    assert build_encoder({"type": "slip"}).encode(message) == packet
    assert slip.decode(packet) == message


@pytest.mark.parametrize("vector", VECTORS["decode_vectors"], ids=lambda v: v["packet_hex"])
def test_decode_vectors(vector: dict[str, str]) -> None:
    packet, message = bytes.fromhex(vector["packet_hex"]), bytes.fromhex(vector["message_hex"])
    assert slip.decode(packet) == message
    frames = SlipDecoder().feed(packet)
    assert frames == [Frame(message, 1, len(packet))]


@pytest.mark.parametrize("vector", VECTORS["decode_must_fail"], ids=lambda v: v["packet_hex"])
def test_single_packet_decode_must_fail(vector: dict[str, str]) -> None:
    with pytest.raises(FrameDecodeError):
        slip.decode(bytes.fromhex(vector["packet_hex"]))


def test_must_fail_packets_in_a_stream() -> None:
    # As the vector notes say, a stream decoder splits at an inner END instead of failing.
    assert [type(e) for e in SlipDecoder().feed(bytes.fromhex("c0db78c0"))] == [FramingError]
    assert [type(e) for e in SlipDecoder().feed(bytes.fromhex("c0616263dbc0"))] == [FramingError]
    assert [e.data for e in SlipDecoder().feed(bytes.fromhex("c061c07ac0")) if isinstance(e, Frame)] == [
        b"a",
        b"z",
    ]


def _expected(text: str) -> str | bytes:
    """Vector messages are text; ``<ProtocolError: ...>`` marks a packet that must fail."""
    if text.startswith("<ProtocolError"):
        return "error"
    return text.encode("latin-1").decode("unicode_escape").encode("latin-1")


@pytest.mark.parametrize("case", VECTORS["stream_cases"], ids=lambda c: c["note"])
@pytest.mark.parametrize("chunk", [None, 1, 3])
def test_stream_cases(case: dict[str, Any], chunk: int | None) -> None:
    stream = bytes.fromhex(case["stream_hex"])
    decoder = SlipDecoder()
    if chunk is None:
        events = decoder.feed(stream)
    else:
        events = [e for i in range(0, len(stream), chunk) for e in decoder.feed(stream[i : i + chunk])]
    got = [e.data if isinstance(e, Frame) else "error" for e in events]
    assert got == [_expected(m) for m in case["expected_messages"]]
    assert decoder.pending_start == len(stream)


def test_bad_packet_error_offset_is_its_first_byte() -> None:
    stream = bytes.fromhex("c06869c077db20c06869c0")
    events = SlipDecoder().feed(stream)
    err = events[1]
    assert isinstance(err, FramingError)
    assert err == FramingError(err.message, 4)
    assert "escape" in err.message


@pytest.mark.parametrize("frame", VECTORS["real_protocol_frames"], ids=lambda f: f["note"][:30])
def test_real_esp_bootloader_frames(frame: dict[str, str]) -> None:
    raw = bytes.fromhex(frame["frame_hex"])
    (decoded,) = SlipDecoder().feed(raw)
    assert isinstance(decoded, Frame)
    assert slip.encode(decoded.data) == raw
    direction, opcode, size = decoded.data[0], decoded.data[1], int.from_bytes(decoded.data[2:4], "little")
    assert direction in (0, 1) and opcode in (0x08, 0x0A)
    assert len(decoded.data) == 8 + size  # ESP serial protocol: 8-byte header + data


def test_all_real_frames_back_to_back_split_correctly() -> None:
    frames = [bytes.fromhex(f["frame_hex"]) for f in VECTORS["real_protocol_frames"]]
    events = build_decoder({"type": "slip"}).feed(b"".join(frames))
    assert [slip.encode(e.data) for e in events if isinstance(e, Frame)] == frames


def test_include_terminators_returns_the_raw_packet() -> None:
    (frame,) = SlipDecoder(include_terminators=True).feed(bytes.fromhex("c0dbdcc0"))
    assert frame == Frame(bytes.fromhex("dbdcc0"), 1, 4)


def test_overlong_packet_is_reported_and_skipped() -> None:
    decoder = SlipDecoder(max_length=4)
    events = decoder.feed(b"\xc0abcdefgh") + decoder.feed(b"ij\xc0ok\xc0")
    assert isinstance(events[0], FramingError) and events[0].offset == 1
    assert events[1:] == [Frame(b"ok", 12, 15)]
