"""What a parser understood of one frame, short: its label (``nmea GGA``, ``ubx NAV-PVT``,
``rtcm3 1077``, ``modbus``, ``at final``) and a few decoded values (sans-IO).

The one-line text of a framed read and the stream summary (``core/summary.py``) both come from
here, so what an agent sees in a frame's line is what a summary counts and ranges over. Values
are picked, not invented: GNSS positions in decimal degrees (NMEA ``ddmm.mmmm`` converted, UBX as
pyubx2 scales them), fix quality as a word, Modbus registers as the PDU decoder gave them. UBX and
RTCM3 message names are pyubx2's / pyrtcm's (``parsed["name"]``), never a table of our own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

Value = int | float | str | list[int]

#: NMEA GGA fix quality (field 6) as a word.
GGA_QUALITY: Final[dict[str, str]] = {
    "0": "none",
    "1": "gps",
    "2": "dgps",
    "3": "pps",
    "4": "rtk",
    "5": "float",
    "6": "dr",
    "7": "manual",
    "8": "sim",
}
#: UBX ``fixType`` / ``gpsFix`` (NAV-PVT, NAV-SOL, NAV-STATUS) as a word.
UBX_FIX: Final[dict[int, str]] = {0: "none", 1: "dr", 2: "2D", 3: "3D", 4: "gnss+dr", 5: "time"}
GSA_FIX: Final[dict[str, str]] = {"1": "none", "2": "2D", "3": "3D"}
RMC_STATUS: Final[dict[str, str]] = {"A": "valid", "V": "void"}
#: Every value :func:`values_of` may give, for any protocol (``fields=`` of a summary names them).
VALUE_NAMES: Final = frozenset(
    {
        *("fix", "sv", "hdop", "vdop", "pdop", "lat", "lon", "alt", "height", "status", "kn", "kmh"),
        *("inview", "hacc", "tow", "week", "utc"),
        *("fc", "addr", "exception", "registers", "bits", "start", "quantity", "value"),
        *("code", "error"),
    }
)


def _degrees(value: str, hemisphere: str) -> float | None:
    """NMEA ``ddmm.mmmm`` / ``dddmm.mmmm`` with ``N``/``S``/``E``/``W`` → signed decimal degrees."""
    try:
        raw = float(value)
    except ValueError:
        return None
    whole = int(raw / 100)
    degrees = whole + (raw - whole * 100) / 60
    return round(-degrees if hemisphere in ("S", "W") else degrees, 6)


def _number(value: str) -> int | float | None:
    try:
        return int(value)
    except ValueError:
        try:
            return float(value)
        except ValueError:
            return None


def _at(values: list[str], i: int) -> str:
    return values[i] if i < len(values) else ""


def _put(out: dict[str, Value], key: str, value: Value | None) -> None:
    if value is not None and value != "":
        out[key] = value


def _gga(v: list[str], out: dict[str, Value]) -> None:
    _put(out, "fix", GGA_QUALITY.get(_at(v, 5)))
    _put(out, "sv", _number(_at(v, 6)))
    _put(out, "hdop", _number(_at(v, 7)))
    _put(out, "lat", _degrees(_at(v, 1), _at(v, 2)))
    _put(out, "lon", _degrees(_at(v, 3), _at(v, 4)))
    _put(out, "alt", _number(_at(v, 8)))


def _rmc(v: list[str], out: dict[str, Value]) -> None:
    _put(out, "status", RMC_STATUS.get(_at(v, 1)))
    _put(out, "lat", _degrees(_at(v, 2), _at(v, 3)))
    _put(out, "lon", _degrees(_at(v, 4), _at(v, 5)))
    _put(out, "kn", _number(_at(v, 6)))


def _gll(v: list[str], out: dict[str, Value]) -> None:
    _put(out, "lat", _degrees(_at(v, 0), _at(v, 1)))
    _put(out, "lon", _degrees(_at(v, 2), _at(v, 3)))
    _put(out, "status", RMC_STATUS.get(_at(v, 5)))


def _gsa(v: list[str], out: dict[str, Value]) -> None:
    _put(out, "fix", GSA_FIX.get(_at(v, 1)))
    _put(out, "pdop", _number(_at(v, 14)))
    _put(out, "hdop", _number(_at(v, 15)))
    _put(out, "vdop", _number(_at(v, 16)))


def _gsv(v: list[str], out: dict[str, Value]) -> None:
    _put(out, "inview", _number(_at(v, 2)))


def _vtg(v: list[str], out: dict[str, Value]) -> None:
    _put(out, "kmh", _number(_at(v, 6)))


_NMEA: Final[dict[str, Callable[[list[str], dict[str, Value]], None]]] = {
    "GGA": _gga,
    "RMC": _rmc,
    "GLL": _gll,
    "GSA": _gsa,
    "GSV": _gsv,
    "VTG": _vtg,
}

#: UBX attributes (pyubx2's names, already scaled) worth a place in the line, in this order, with
#: their short names and how each is shown; any message that has one gets it.
_UBX_PICK: Final[tuple[tuple[str, str, Callable[[Any], Value | None]], ...]] = (
    ("fixType", "fix", lambda v: UBX_FIX.get(v, str(v))),
    ("gpsFix", "fix", lambda v: UBX_FIX.get(v, str(v))),
    ("lat", "lat", lambda v: round(v, 7) if isinstance(v, float) else None),
    ("lon", "lon", lambda v: round(v, 7) if isinstance(v, float) else None),
    ("height", "height", lambda v: round(v / 1000, 3) if isinstance(v, int | float) else None),
    ("hMSL", "alt", lambda v: round(v / 1000, 3) if isinstance(v, int | float) else None),
    ("numSV", "sv", lambda v: v if isinstance(v, int) else None),
    ("numSvs", "sv", lambda v: v if isinstance(v, int) else None),
    ("hAcc", "hacc", lambda v: round(v / 1000, 3) if isinstance(v, int | float) else None),
    ("pDOP", "pdop", lambda v: v if isinstance(v, int | float) else None),
    ("hDOP", "hdop", lambda v: v if isinstance(v, int | float) else None),
    ("vDOP", "vdop", lambda v: v if isinstance(v, int | float) else None),
    ("towMS", "tow", lambda v: v / 1000 if isinstance(v, int) else None),
    ("week", "week", lambda v: v if isinstance(v, int) else None),
)


def _ecef(fields: dict[str, Any], out: dict[str, Value]) -> None:
    """NAV-POSECEF's ``ecefX/Y/Z`` (cm) as ``lat``/``lon`` (degrees) and ``height`` (m, ellipsoid):
    pyubx2's WGS-84 conversion."""
    xyz = [fields.get(k) for k in ("ecefX", "ecefY", "ecefZ")]
    if not all(isinstance(c, int | float) and not isinstance(c, bool) for c in xyz) or not any(xyz):
        return
    from pyubx2 import ecef2llh  # type: ignore[import-untyped]  # the UBX parser has loaded pyubx2

    lat, lon, height = ecef2llh(*(c / 100 for c in xyz))  # type: ignore[operator]
    out["lat"], out["lon"], out["height"] = round(lat, 7), round(lon, 7), round(height, 3)


def _ubx(fields: dict[str, Any], out: dict[str, Value]) -> None:
    if "ecefX" in fields and "lat" not in fields:
        _ecef(fields, out)
    for attr, key, show in _UBX_PICK:
        if key not in out and attr in fields:
            _put(out, key, show(fields[attr]))
    valid = fields.get("validUTC", fields.get("validDate", 0) and fields.get("validTime", 0))
    if "year" in fields and "hour" in fields and valid:  # NAV-TIMEUTC, NAV-PVT
        seconds = "sec" if "sec" in fields else "second"
        try:
            out["utc"] = "{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}".format(
                *(int(fields[k]) for k in ("year", "month", "day", "hour", "min", seconds))
            )
        except (KeyError, TypeError, ValueError):
            pass


def _modbus(p: dict[str, Any], out: dict[str, Value]) -> None:
    function = p.get("function")
    if isinstance(function, int):
        out["fc"] = f"{function:02d}"
    _put(out, "addr", p.get("address"))
    if p.get("exception"):
        _put(out, "exception", p.get("exception_name") or p.get("exception_code"))
        return
    for key in ("registers", "bits"):
        if isinstance(p.get(key), list):
            out[key] = p[key]
    for key in ("start", "quantity", "value"):
        if isinstance(p.get(key), int):
            out[key] = p[key]


def _at_command(p: dict[str, Any], out: dict[str, Value]) -> None:
    kind = p.get("kind")
    if kind == "final":
        _put(out, "", p.get("status"))
        _put(out, "code", p.get("error_code"))
        _put(out, "error", p.get("error_text"))
    elif kind in ("response", "urc") and "command" in p:
        _put(out, "", f"{p['command']}: {','.join(str(v) for v in p.get('values', []))}")
    elif kind == "echo":
        _put(out, "", p.get("command"))
    elif "text" in p:
        _put(out, "", p.get("text"))


def protocol_of(parsed: dict[str, Any]) -> str:
    """The frame's kind label: ``nmea``, ``ubx``, ``rtcm3``, ``modbus``, ``at``, else its ``kind``."""
    protocol = parsed.get("protocol")
    if isinstance(protocol, str):
        return protocol
    kind = parsed.get("kind")
    if kind in ("sentence", "ais"):
        return "nmea"
    if kind == "modbus":
        return "modbus"
    if kind in ("final", "urc", "response", "echo") and (
        "status" in parsed or "command" in parsed or kind == "urc"
    ):
        return "at"
    return str(kind or parsed.get("type") or "frame")


def message_type(parsed: dict[str, Any] | None) -> str:
    """What the frame is within its kind: NMEA sentence id (``GPGGA``), UBX / RTCM3 message name
    or number, Modbus function (``fc03``), AT ``final OK`` / ``urc``; ``frame`` without a parser."""
    if not parsed:
        return "frame"
    protocol = protocol_of(parsed)
    if protocol == "nmea":
        return str(parsed.get("address") or parsed.get("kind") or "?")
    if protocol == "ubx":
        return str(parsed.get("name") or f"{parsed.get('class')}-{parsed.get('id')}")
    if protocol == "rtcm3":
        return str(parsed.get("type", "?"))
    if protocol == "modbus":
        function = parsed.get("function")
        return f"fc{function:02d}" if isinstance(function, int) else "?"
    if protocol == "at":
        kind = str(parsed.get("kind"))
        return f"final {parsed.get('status')}" if kind == "final" else kind
    return str(parsed.get("kind") or "frame")


def label_of(parsed: dict[str, Any] | None) -> str:
    """``nmea GPGGA`` / ``ubx NAV-PVT`` / ``rtcm3 1077`` / ``modbus`` / ``at final``: the kind,
    then the message type where the kind has several."""
    if not parsed:
        return ""
    protocol = protocol_of(parsed)
    if protocol in ("nmea", "ubx", "rtcm3"):
        return f"{protocol} {message_type(parsed)}"
    if protocol == "at":
        return f"at {parsed.get('kind')}"
    return protocol


def values_of(parsed: dict[str, Any] | None) -> dict[str, Value]:
    """The few decoded values worth a line (key ``""`` is a bare word: ``OK``); empty when the
    parser understood nothing beyond the frame's type."""
    out: dict[str, Value] = {}
    if not parsed:
        return out
    protocol = protocol_of(parsed)
    if protocol == "nmea":
        fill = _NMEA.get(str(parsed.get("sentence", "")))
        values = parsed.get("fields")
        if fill is not None and isinstance(values, list):
            fill(values, out)
    elif protocol == "ubx":
        fields = parsed.get("fields")
        if isinstance(fields, dict):
            _ubx(fields, out)
    elif protocol == "rtcm3":
        fields = parsed.get("fields")
        if isinstance(fields, dict) and isinstance(fields.get("NSat"), int):  # MSM: satellites observed
            out["sv"] = fields["NSat"]
    elif protocol == "modbus":
        _modbus(parsed, out)
    elif protocol == "at":
        _at_command(parsed, out)
    return out


def render(values: dict[str, Value]) -> str:
    """``fix=3D lat=44.06881 sv=11`` (a bare word for key ``""``)."""
    return " ".join((str(v) if k == "" else f"{k}={_show(v)}") for k, v in values.items())


def _show(value: Value) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)
