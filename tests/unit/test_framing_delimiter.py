"""Delimiter framing, including multi-byte delimiters torn across chunks and declarative checksums."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from serial_mcp.core.framing import DelimiterDecoder, Frame, FramingError, build_decoder, build_encoder
from serial_mcp.core.framing.checksum import ChecksumSpec

MODBUS = json.loads(
    (Path(__file__).parents[1] / "data" / "modbus_ascii" / "modbus_ascii_vectors.json").read_text()
)


def test_multibyte_delimiter_torn_across_chunks() -> None:
    decoder = DelimiterDecoder(b"<END>")
    assert decoder.feed(b"one<EN") == []
    assert decoder.pending_start == 0
    assert decoder.feed(b"D>two<") == [Frame(b"one", 0, 8)]
    assert decoder.feed(b"END>") == [Frame(b"two", 8, 16)]


def test_delimiter_from_hex() -> None:
    decoder = build_decoder({"type": "delimiter", "delimiter": "03", "encoding": "hex"})
    assert decoder.feed(b"\x02abc\x03\x02de\x03") == [Frame(b"\x02abc", 0, 5), Frame(b"\x02de", 5, 9)]


def test_delimiter_from_base64() -> None:
    decoder = build_decoder({"type": "delimiter", "delimiter": "fn4=", "encoding": "base64"})  # 7e 7e
    assert decoder.feed(b"a~~b~~") == [Frame(b"a", 0, 3), Frame(b"b", 3, 6)]


def test_include_terminators_and_skip_empty() -> None:
    config = {"type": "delimiter", "delimiter": ";", "include_terminators": True, "skip_empty": True}
    assert build_decoder(config).feed(b";a;;b;") == [Frame(b"a;", 1, 3), Frame(b"b;", 4, 6)]


def test_flush_emits_trailing_payload() -> None:
    decoder = DelimiterDecoder(b";")
    decoder.feed(b"a;tail")
    assert decoder.flush() == [Frame(b"tail", 2, 6)]


# --- declarative checksum -------------------------------------------------------------------------


@pytest.mark.parametrize("vector", MODBUS["rtu_crc_frames"], ids=lambda v: v["frame_hex"])
def test_crc16_modbus_checksum_on_real_rtu_frames(vector: dict[str, str]) -> None:
    frame = bytes.fromhex(vector["frame_hex"])
    config = {
        "type": "delimiter",
        "delimiter": "7e7e7e",
        "encoding": "hex",
        "checksum": {"algorithm": "crc16_modbus", "endianness": "little"},
    }
    (good,) = build_decoder(config).feed(frame + b"~~~")
    assert good == Frame(frame[:-2], 0, len(frame) + 3, True)
    corrupted = bytes([frame[0] ^ 1]) + frame[1:]
    (bad,) = build_decoder(config).feed(corrupted + b"~~~")
    assert isinstance(bad, Frame) and bad.checksum_valid is False
    assert build_encoder(config).encode(frame[:-2]) == frame + b"~~~"


def test_checksum_big_endian_default_and_hex_format() -> None:
    spec = ChecksumSpec("xor", 1, "big", "hex", b"*")
    assert spec.append(b"GPGLL,1") == b"GPGLL,1*" + b"%02X" % spec.compute(b"GPGLL,1")
    assert spec.split(b"GPGLL,1*" + b"%02x" % spec.compute(b"GPGLL,1")) == (b"GPGLL,1", True)  # lower case ok
    assert spec.split(b"GPGLL,1*ZZ") == (b"GPGLL,1*ZZ", False)
    assert spec.split(b"GPGLL,1") == (b"GPGLL,1", False)  # no separator: the checksum is missing
    assert spec.split(b"*") == (b"*", False)


def test_frame_too_short_for_its_checksum_is_invalid() -> None:
    config = {"type": "delimiter", "delimiter": "\n", "checksum": {"algorithm": "crc32"}}
    assert build_decoder(config).feed(b"ab\n") == [Frame(b"ab", 0, 3, False)]


def test_include_terminators_keeps_the_checksum_bytes() -> None:
    config = {
        "type": "delimiter",
        "delimiter": "\n",
        "include_terminators": True,
        "checksum": {"algorithm": "sum8", "format": "hex"},
    }
    wire = build_encoder({k: v for k, v in config.items() if k != "include_terminators"}).encode(b"abc")
    assert build_decoder(config).feed(wire) == [Frame(wire, 0, len(wire), True)]


def test_overlong_frame_error() -> None:
    decoder = DelimiterDecoder(b"||", max_length=3)
    events = decoder.feed(b"ab||abcdef||x||")
    assert events[0] == Frame(b"ab", 0, 4)
    assert isinstance(events[1], FramingError) and events[1].offset == 4
    assert events[2] == Frame(b"x", 12, 15)
