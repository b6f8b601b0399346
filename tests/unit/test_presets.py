"""Presets and the four-layer precedence.

Call field -> call protocol -> connection field -> connection protocol; first set wins.
"""

from __future__ import annotations

from typing import Any

import pytest

from serial_mcp.core.framing import build_decoder, build_encoder
from serial_mcp.core.parsers import build_parser
from serial_mcp.core.presets import FIELDS, PRESETS, get_preset, preset_names, resolve, resolve_all
from serial_mcp.errors import InvalidArgument

CALL_FIELD = {"type": "delimiter", "delimiter": ";"}
CONN_FIELD = {"type": "cobs"}


def test_the_contract_names_exist() -> None:
    assert set(preset_names()) >= {
        "at_command",
        "slip",
        "json_lines",
        "ndjson",
        "cobs",
        "nmea0183",
        "modbus_ascii",
        "grbl",
    }


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_builds(name: str) -> None:
    preset = get_preset(name)
    build_decoder(preset.get("rx_framing"))
    build_encoder(preset.get("tx_framing"))
    build_parser(preset.get("rx_parser"))
    assert preset.description


def test_preset_contents() -> None:
    at = get_preset("at_command")
    assert at.get("rx_framing")["ending"] == "auto"
    assert build_encoder(at.get("tx_framing")).encode(b"AT") == b"AT\r"
    nmea = get_preset("nmea0183")
    assert nmea.get("rx_parser") == {"type": "nmea", "validate": True}
    assert (
        build_encoder(nmea.get("tx_framing")).encode(b"GPGLL,1")
        == b"$GPGLL,1*" + b"%02X" % (0x47 ^ 0x50 ^ 0x47 ^ 0x4C ^ 0x4C ^ 0x2C ^ 0x31) + b"\r\n"
    )
    modbus = get_preset("modbus_ascii")
    assert modbus.get("rx_framing") == {"type": "start_end", "start": [":"], "end": "\r\n"}
    assert (
        build_encoder(modbus.get("tx_framing")).encode(bytes.fromhex("010310010001"))
        == b":010310010001EA\r\n"
    )


def test_preset_values_are_private_copies() -> None:
    mine = get_preset("at_command").get("rx_framing")
    mine["ending"] = "lf"
    assert get_preset("at_command").get("rx_framing")["ending"] == "auto"


def test_unknown_preset_lists_the_valid_names() -> None:
    with pytest.raises(InvalidArgument) as info:
        get_preset("nmea")
    assert "protocol 'nmea' is not a known preset" in info.value.message
    assert "Did you mean 'nmea0183'?" in info.value.message
    assert "at_command, slip" in info.value.message
    assert info.value.code == "invalid_argument"


# --- precedence ------------------------------------------------------------------------------------

LAYERS: list[tuple[dict[str, Any], str]] = [
    # (call_value, call_protocol, conn_value, conn_protocol) -> which wins
    ({"cv": CALL_FIELD, "cp": "slip", "nv": CONN_FIELD, "np": "grbl"}, "call"),
    ({"cv": None, "cp": "slip", "nv": CONN_FIELD, "np": "grbl"}, "call_protocol"),
    ({"cv": None, "cp": None, "nv": CONN_FIELD, "np": "grbl"}, "connection"),
    ({"cv": None, "cp": None, "nv": None, "np": "grbl"}, "connection_protocol"),
    ({"cv": None, "cp": None, "nv": None, "np": None}, "none"),
    ({"cv": CALL_FIELD, "cp": None, "nv": None, "np": "grbl"}, "call"),
    ({"cv": None, "cp": "slip", "nv": None, "np": None}, "call_protocol"),
    ({"cv": CALL_FIELD, "cp": None, "nv": CONN_FIELD, "np": None}, "call"),
]


@pytest.mark.parametrize(("layers", "winner"), LAYERS)
@pytest.mark.parametrize("field", FIELDS)
def test_first_set_layer_wins(layers: dict[str, Any], winner: str, field: str) -> None:
    expected = {
        "call": CALL_FIELD,
        "call_protocol": get_preset("slip").get(field),  # type: ignore[arg-type]
        "connection": CONN_FIELD,
        "connection_protocol": get_preset("grbl").get(field),  # type: ignore[arg-type]
        "none": None,
    }[winner]
    assert resolve(field, layers["cv"], layers["cp"], layers["nv"], layers["np"]) == expected
    resolved = resolve_all(
        {"rx_framing": None, "protocol": layers["cp"], field: layers["cv"]},
        {"protocol": layers["np"], field: layers["nv"]},
    )
    assert getattr(resolved, field) == expected
    assert resolved.sources[field] == winner


def test_fields_resolve_independently() -> None:
    resolved = resolve_all(
        {"rx_parser": {"type": "raw"}},
        {"protocol": "nmea0183", "tx_framing": {"type": "line", "ending": "crlf"}},
    )
    assert resolved.rx_framing == get_preset("nmea0183").get("rx_framing")
    assert resolved.tx_framing == {"type": "line", "ending": "crlf"}
    assert resolved.rx_parser == {"type": "raw"}
    assert resolved.sources == {
        "rx_framing": "connection_protocol",
        "tx_framing": "connection",
        "rx_parser": "call",
    }


def test_call_protocol_does_not_mix_with_connection_fields() -> None:
    resolved = resolve_all({"protocol": "slip"}, {"rx_parser": {"type": "nmea"}})
    assert resolved.rx_parser == {"type": "raw"}  # presets set every field


def test_a_misspelt_protocol_is_reported_even_when_a_higher_layer_wins() -> None:
    with pytest.raises(InvalidArgument, match="'nmea183'"):
        resolve("rx_framing", CALL_FIELD, None, None, "nmea183")
    with pytest.raises(InvalidArgument, match="'jsonlines'"):
        resolve_all({"protocol": "jsonlines", "rx_framing": CALL_FIELD}, {})


def test_resolved_values_are_copies() -> None:
    value = {"type": "line", "ending": "lf"}
    result = resolve("rx_framing", value, None, None, None)
    assert result == value and result is not value


def test_unknown_field_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown field"):
        resolve("tx_parser", None, None, None, None)
