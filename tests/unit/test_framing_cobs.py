"""COBS against the cobs-python and Wikipedia vectors, plus the standard ``enc 00 enc 00`` stream."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from serial_mcp.core.framing import CobsDecoder, Frame, FrameDecodeError, FramingError, build_encoder, cobs

COBS: dict[str, Any] = json.loads(
    (Path(__file__).parents[1] / "data" / "slip_cobs" / "slip_cobs_vectors.json").read_text()
)["cobs"]


def _pair(vector: dict[str, Any]) -> tuple[bytes, bytes]:
    """(raw, encoded without the 00 delimiter) whichever convention the vector uses."""
    raw = bytes.fromhex(vector["raw_hex"])
    if "encoded_hex" in vector:
        return raw, bytes.fromhex(vector["encoded_hex"])
    with_delimiter = bytes.fromhex(vector["encoded_with_delimiter_hex"])
    assert with_delimiter.endswith(b"\x00")
    return raw, with_delimiter[:-1]


VECTORS = [_pair(v) for v in COBS["vectors"]]


@pytest.mark.parametrize(("raw", "encoded"), VECTORS, ids=[f"{len(r)}B-{r[:4].hex()}" for r, _ in VECTORS])
def test_encode_and_decode_vectors(raw: bytes, encoded: bytes) -> None:
    assert cobs.encode(raw) == encoded
    assert cobs.decode(encoded) == raw
    assert build_encoder({"type": "cobs"}).encode(raw) == encoded + b"\x00"
    assert CobsDecoder().feed(encoded + b"\x00") == [Frame(raw, 0, len(encoded) + 1)]


@pytest.mark.parametrize("vector", COBS["decode_must_fail"], ids=lambda v: v["encoded_hex"])
def test_decode_must_fail(vector: dict[str, str]) -> None:
    with pytest.raises(FrameDecodeError):
        cobs.decode(bytes.fromhex(vector["encoded_hex"]))


def test_truncated_frame_in_a_stream_is_an_error_and_the_next_frame_survives() -> None:
    stream = bytes.fromhex("0531323300023100")
    events = CobsDecoder().feed(stream)
    assert isinstance(events[0], FramingError) and events[0].offset == 0
    assert events[1:] == [Frame(b"1", 5, 8)]


def test_standard_stream_decodes_every_frame() -> None:
    # The reference server needed a 00 before each frame and lost every second one.
    stream = b"".join(cobs.encode(raw) + b"\x00" for raw, _ in VECTORS)
    frames = CobsDecoder().feed(stream)
    assert [f.data for f in frames if isinstance(f, Frame)] == [raw for raw, _ in VECTORS]


def test_leading_and_repeated_zeros_are_accepted() -> None:
    stream = b"\x00" + cobs.encode(b"a\x00b") + b"\x00\x00\x00" + cobs.encode(b"") + b"\x00"
    assert [f.data for f in CobsDecoder().feed(stream) if isinstance(f, Frame)] == [b"a\x00b", b""]
    assert [f.data for f in CobsDecoder(skip_empty=True).feed(stream) if isinstance(f, Frame)] == [b"a\x00b"]


def test_frame_offsets_cover_the_delimiter() -> None:
    stream = b"\x00" + bytes.fromhex("031122023300")
    assert CobsDecoder().feed(stream) == [Frame(bytes.fromhex("11220033"), 1, 7)]
    assert CobsDecoder(include_terminators=True).feed(stream) == [Frame(bytes.fromhex("031122023300"), 1, 7)]


def test_frame_split_across_feeds() -> None:
    encoded = cobs.encode(bytes(range(256)) * 3) + b"\x00"
    decoder = CobsDecoder(offset=1000)
    assert decoder.feed(encoded[:300]) == []
    assert decoder.pending_start == 1000
    assert decoder.feed(encoded[300:]) == [Frame(bytes(range(256)) * 3, 1000, 1000 + len(encoded))]
    assert decoder.pending_start == 1000 + len(encoded)
