"""Named protocol presets and the one place that resolves framing/parser settings by precedence.

Per field (``rx_framing``, ``tx_framing``, ``rx_parser``), first set wins:
the call's explicit field -> the call's ``protocol`` -> the connection's default field ->
the connection's ``protocol``. ``read``, ``write`` and ``transact`` all go through here.
Every preset sets all three fields, so a call's ``protocol`` never mixes with the
connection's settings.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from serial_mcp import messages
from serial_mcp.core.unknown_keys import did_you_mean
from serial_mcp.errors import InvalidArgument

__all__ = ["FIELDS", "PRESETS", "Preset", "Resolved", "get_preset", "preset_names", "resolve", "resolve_all"]

Field = Literal["rx_framing", "tx_framing", "rx_parser"]
FIELDS: Final[tuple[Field, ...]] = ("rx_framing", "tx_framing", "rx_parser")
Source = Literal["call", "call_protocol", "connection", "connection_protocol", "none"]


@dataclass(frozen=True, slots=True)
class Preset:
    """A named bundle of RX framing, TX framing and RX parser."""

    name: str
    description: str
    rx_framing: Mapping[str, Any]
    tx_framing: Mapping[str, Any]
    rx_parser: Mapping[str, Any]

    def get(self, name: Field) -> dict[str, Any]:
        """A private deep copy of one field (callers may mutate it)."""
        value: Mapping[str, Any] = getattr(self, name)
        return copy.deepcopy(dict(value))


_LINES = {"type": "line", "ending": "auto", "skip_empty": True}
_RAW = {"type": "raw"}
_JSON_LINES = Preset(
    "json_lines",
    "One JSON value per line; non-JSON lines come back as raw text.",
    _LINES,
    {"type": "line", "ending": "lf"},
    {"type": "json_lines"},
)

PRESETS: Final[Mapping[str, Preset]] = {
    p.name: p
    for p in (
        Preset(
            "at_command",
            "AT modems and modules: lines in (CR, LF or CRLF), commands out ending in CR.",
            _LINES,
            {"type": "line", "ending": "cr"},
            {"type": "at_command"},
        ),
        Preset("slip", "SLIP packets (RFC 1055) both ways.", {"type": "slip"}, {"type": "slip"}, _RAW),
        _JSON_LINES,
        replace(_JSON_LINES, name="ndjson", description="Newline-delimited JSON (same as json_lines)."),
        Preset("cobs", "COBS frames delimited by 0x00 both ways.", {"type": "cobs"}, {"type": "cobs"}, _RAW),
        Preset(
            "nmea0183",
            "NMEA 0183 / AIS sentences; bad checksums dropped; writes get *HH and CRLF.",
            {"type": "nmea"},
            {"type": "nmea"},
            {"type": "nmea", "validate": True},
        ),
        Preset(
            "modbus_ascii",
            "Modbus ASCII ':'...CRLF frames; bad LRCs dropped; writes take the binary address+PDU.",
            {"type": "start_end", "start": [":"], "end": "\r\n"},
            {"type": "modbus_ascii"},
            {"type": "modbus_ascii", "validate": True},
        ),
        Preset(
            "gnss",
            "GNSS receivers: NMEA 0183 + UBX + RTCM3 in one stream, each frame tagged with its "
            "protocol; bad checksums dropped; writes are UBX (class+id+payload).",
            {"type": "gnss"},
            {"type": "ubx"},
            {"type": "gnss", "validate": True},
        ),
        Preset(
            "modbus_rtu",
            "Modbus RTU: function-aware frames, bad CRCs dropped; writes take address+PDU, get the CRC.",
            {"type": "modbus_rtu"},
            {"type": "modbus_rtu"},
            {"type": "modbus_rtu", "validate": True},
        ),
        Preset(
            "grbl",
            "grbl CNC controllers: lines in, G-code lines out ending in LF.",
            _LINES,
            {"type": "line", "ending": "lf"},
            {"type": "grbl"},
        ),
    )
}


def preset_names() -> list[str]:
    """Every preset name, in a stable order."""
    return list(PRESETS)


def get_preset(name: object) -> Preset:
    """The preset called ``name``; InvalidArgument listing the valid names otherwise."""
    preset = PRESETS.get(name) if isinstance(name, str) else None
    if preset is None:
        raise InvalidArgument(
            messages.PRESET_UNKNOWN.format(
                name=name, hint=did_you_mean(name, PRESETS), allowed=", ".join(PRESETS)
            ),
            field="protocol",
        )
    return preset


def _check_field(name: str) -> Field:
    if name not in FIELDS:
        raise ValueError(f"unknown field {name!r}; expected one of {FIELDS}")
    return name


def _resolve(
    name: Field, call_value: object, call_protocol: object, conn_value: object, conn_protocol: object
) -> tuple[Any, Source]:
    call_preset = get_preset(call_protocol) if call_protocol is not None else None
    conn_preset = get_preset(conn_protocol) if conn_protocol is not None else None
    if call_value is not None:
        return copy.deepcopy(call_value), "call"
    if call_preset is not None:
        return call_preset.get(name), "call_protocol"
    if conn_value is not None:
        return copy.deepcopy(conn_value), "connection"
    if conn_preset is not None:
        return conn_preset.get(name), "connection_protocol"
    return None, "none"


def resolve(
    field: str, call_value: object, call_protocol: object, conn_value: object, conn_protocol: object
) -> Any:
    """The effective value of one field (a private copy), or None when no layer sets it.

    ``None`` (JSON null) means "not set at this layer". Explicit values are returned as given
    (``build_decoder`` / ``build_encoder`` / ``build_parser`` validate them); both protocol
    names are checked even when a higher layer wins, so a typo never hides.
    """
    return _resolve(_check_field(field), call_value, call_protocol, conn_value, conn_protocol)[0]


@dataclass(frozen=True, slots=True)
class Resolved:
    """The three effective settings and which layer each came from (for results and logs)."""

    rx_framing: Any
    tx_framing: Any
    rx_parser: Any
    sources: dict[str, Source]


def resolve_all(call: Mapping[str, Any], connection: Mapping[str, Any]) -> Resolved:
    """Resolve all three fields from the call's and the connection's settings.

    Each layer is a mapping with optional ``protocol``, ``rx_framing``, ``tx_framing`` and
    ``rx_parser`` keys (absent or None = not set).
    """
    values: dict[str, Any] = {}
    sources: dict[str, Source] = {}
    for name in FIELDS:
        values[name], sources[name] = _resolve(
            name, call.get(name), call.get("protocol"), connection.get(name), connection.get("protocol")
        )
    return Resolved(values["rx_framing"], values["tx_framing"], values["rx_parser"], sources)


RAW_PROTOCOL: Final = "raw"
_NONE: Final[dict[str, str]] = {"type": "none"}


def _is_none(value: Any) -> bool:
    return isinstance(value, Mapping) and value.get("type") == "none"


def effective(call: Mapping[str, Any], connection: Mapping[str, Any]) -> Resolved:
    """``resolve_all`` plus the two ways to say "no framing": ``protocol: "raw"`` (all three
    fields off at that layer) and ``{"type": "none"}`` on one field. Off fields come back None."""
    layers = []
    for layer in (call, connection):
        layer = dict(layer)
        if layer.get("protocol") == RAW_PROTOCOL:
            layer["protocol"] = None
            for name in FIELDS:
                if layer.get(name) is None:
                    layer[name] = dict(_NONE)
        layers.append(layer)
    r = resolve_all(layers[0], layers[1])
    raw_rx = _is_none(r.rx_framing)  # no framing means no frames to parse either
    return Resolved(
        None if raw_rx else r.rx_framing,
        None if _is_none(r.tx_framing) else r.tx_framing,
        None if raw_rx or _is_none(r.rx_parser) else r.rx_parser,
        r.sources,
    )
