"""Modbus ASCII parser and encoder against pymodbus / minimalmodbus vectors (incl. a real Delta DTB4824)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from serial_mcp.core.decode import DecodedFrame, StreamDecoder
from serial_mcp.core.framing import build_encoder
from serial_mcp.core.parsers import ModbusAsciiParser, modbus_ascii_encode
from serial_mcp.core.presets import get_preset
from serial_mcp.errors import InvalidArgument

VECTORS: dict[str, Any] = json.loads(
    (Path(__file__).parents[1] / "data" / "modbus_ascii" / "modbus_ascii_vectors.json").read_text()
)


def preset_decoder() -> StreamDecoder:
    preset = get_preset("modbus_ascii")
    return StreamDecoder(preset.get("rx_framing"), preset.get("rx_parser"))


@pytest.mark.parametrize("vector", VECTORS["valid_frames"], ids=lambda v: v["wire"].strip())
def test_valid_frames_parse(vector: dict[str, Any]) -> None:
    parsed = ModbusAsciiParser().parse(vector["wire"].encode())
    pdu = bytes.fromhex(vector["pdu_hex"])
    assert parsed.checksum_valid is True
    assert parsed.fields["address"] == vector["address"]
    assert parsed.fields["function"] == pdu[0]
    assert parsed.fields["data"] == pdu[1:].hex()
    assert parsed.fields["lrc"] == int(vector["lrc_hex"], 16)


@pytest.mark.parametrize("vector", VECTORS["valid_frames"], ids=lambda v: v["wire"].strip())
def test_encode_reproduces_the_wire(vector: dict[str, Any]) -> None:
    pdu = bytes([vector["address"]]) + bytes.fromhex(vector["pdu_hex"])
    assert modbus_ascii_encode(pdu) == vector["wire"].encode()
    assert build_encoder({"type": "modbus_ascii"}).encode(pdu) == vector["wire"].encode()


@pytest.mark.parametrize(
    "vector", VECTORS["frames_with_wrong_lrc_as_published"], ids=lambda v: v["wire"].strip()
)
def test_published_wrong_lrcs_are_detected(vector: dict[str, Any]) -> None:
    assert ModbusAsciiParser().parse(vector["wire"].encode()).checksum_valid is False
    assert ModbusAsciiParser().parse(vector["corrected_wire"].encode()).checksum_valid is True
    pdu = bytes([vector["address"]]) + bytes.fromhex(vector["pdu_hex"])
    assert modbus_ascii_encode(pdu) == vector["corrected_wire"].encode()


@pytest.mark.parametrize("vector", VECTORS["lrc_known_values"], ids=lambda v: v["data_hex"])
def test_known_lrc_values(vector: dict[str, str]) -> None:
    data = bytes.fromhex(vector["data_hex"])
    assert modbus_ascii_encode(data)[-4:-2] == vector["lrc_hex"].encode()


@pytest.mark.parametrize("case", VECTORS["stream_cases"], ids=lambda c: c["note"])
def test_stream_cases_with_the_preset(case: dict[str, Any]) -> None:
    """pymodbus' expected PDUs: a bad-LRC frame yields nothing, a good one its PDU."""
    decoder = preset_decoder()
    frames = [e for e in decoder.feed(case["wire"].encode()) if isinstance(e, DecodedFrame)]
    expected = [c["pdu_hex"] for c in case["pymodbus_expected_decode_calls"] if c["pdu_hex"]]
    got = [f"{f.parsed['function']:02x}{f.parsed['data']}" for f in frames if f.parsed]
    if case["wire"].count("\r\n") > len(
        case["pymodbus_expected_decode_calls"]
    ):  # pymodbus consumed 2 in 1 call
        expected = expected[-1:]
    assert got == expected
    assert decoder.frames_dropped == case["wire"].count(":0003007C00017F")


def test_real_delta_exchange_through_the_preset() -> None:
    request = modbus_ascii_encode(bytes.fromhex("010310010001"))
    response = b":0103020320D7\r\n"
    assert request == b":010310010001EA\r\n"
    (frame,) = preset_decoder().feed(response)
    assert isinstance(frame, DecodedFrame) and frame.parsed is not None
    assert (frame.parsed["address"], frame.parsed["function"], frame.parsed["data"]) == (1, 3, "020320")


def test_exception_response() -> None:
    parsed = ModbusAsciiParser().parse(b":0083027B\r\n")
    assert parsed.fields["exception"] is True and parsed.fields["exception_code"] == 2


@pytest.mark.parametrize("payload", [b"", b":", b"0103", b"01030", b"0103ZZ", b":01 03 02"])
def test_malformed_frames_are_invalid(payload: bytes) -> None:
    parsed = ModbusAsciiParser().parse(payload)
    assert parsed.fields["kind"] == "invalid" and parsed.checksum_valid is False


def test_encode_needs_address_and_function() -> None:
    with pytest.raises(InvalidArgument, match="at least the address and function"):
        modbus_ascii_encode(b"\x01")
