"""Numeric values of decoded frames as time series, for the page's plots (sans-IO).

What the parsers yield is turned into named numbers:

- NMEA 0183 (fields by position, as NMEA 0183 v4.11 lays them out): GGA fix quality, satellites
  used, HDOP, altitude; RMC speed and course; VTG speed in km/h; GSA fix type and PDOP; GSV
  satellites in view per talker (first message of each group only). Frames with a bad checksum
  are left out.
- JSON lines: every numeric leaf, by its dotted key (``sensor.temp``); a bare number is ``value``.
- Modbus ASCII: register values of read responses (functions 3 and 4), named after the slave and
  the start register of the request that preceded them (``slave1.reg0x1001``).
- AT commands: numeric values of ``+CMD: a,b`` responses (``+CSQ.0``).
- UBX and RTCM3 (the ``gnss`` preset): the message's numeric fields by message name
  (``NAV-PVT.numSV``, ``NAV-PVT.hMSL``), without per-satellite repeats (``cno_01`` ...), time of
  week counters and reserved fields.

A number no float holds (JSON's ``1e999``, ``NaN``, a 400-digit integer; a NaN float field) is a
missing value: left out of its series and counted (``extract_series``'s second result).

Without ``--fields`` the page shows the few series that vary (a preferred order first, then the
longest); with it, the named ones (full name, or the part after the last dot).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

DEFAULT_PLOTS: Final = 4
_MAX_SERIES: Final = 200
_PREFERRED: Final = (
    "GGA.fix_quality",
    "GGA.satellites",
    "RMC.speed_kn",
    "VTG.speed_kmh",
    "GGA.altitude_m",
    "GGA.hdop",
    "GSA.pdop",
    "NAV-PVT.fixType",
    "NAV-PVT.numSV",
    "NAV-PVT.gSpeed",
    "NAV-PVT.hMSL",
)
_SKIPPED_KEY: Final = re.compile(r"_\d+$|tow|reserved|^week$|^version$|^DF0(02|03)$", re.IGNORECASE)
# sentence -> ((index in the comma-separated fields after the address, name), ...)
_NMEA_FIELDS: Final[dict[str, tuple[tuple[int, str], ...]]] = {
    "GGA": ((5, "fix_quality"), (6, "satellites"), (7, "hdop"), (8, "altitude_m")),
    "RMC": ((6, "speed_kn"), (7, "course_deg")),
    "VTG": ((6, "speed_kmh"),),
    "GSA": ((1, "fix_type"), (14, "pdop")),
}


@dataclass(slots=True)
class Series:
    """One named numeric value over time."""

    name: str
    t: list[float] = field(default_factory=list)
    v: list[float] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "t": self.t, "v": self.v}


def finite(value: int | float) -> float | None:
    """``value`` as a float, or None where no float holds it: ``inf``, ``NaN`` (JSON's ``1e999``,
    ``NaN``, ``Infinity``) or an integer beyond the float range (a 400-digit one)."""
    try:
        f = float(value)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def _number(text: object) -> float | None:
    if isinstance(text, bool):
        return None
    if isinstance(text, int | float):
        return finite(text)
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def nmea_values(parsed: dict[str, Any]) -> Iterable[tuple[str, float]]:
    """Named numbers of a known NMEA sentence (``GGA.satellites``, ``RMC.speed_kn`` ...)."""
    sentence = parsed.get("sentence")
    values = parsed.get("fields")
    if not isinstance(sentence, str) or not isinstance(values, list) or parsed.get("talker") == "P":
        return
    if sentence == "GSV":
        if len(values) > 2 and values[1] == "1" and (n := _number(values[2])) is not None:
            yield f"{parsed.get('talker', '')}GSV.satellites_in_view", n
        return
    for index, name in _NMEA_FIELDS.get(sentence, ()):
        if index < len(values) and (n := _number(values[index])) is not None:
            yield f"{sentence}.{name}", n


# A numeric leaf is (name, value); value None is a number no float holds (counted, not plotted).
_Leaf = tuple[str, float | None]


def _json_leaves(value: object, prefix: str, depth: int = 0) -> Iterable[_Leaf]:
    if isinstance(value, dict) and depth < 4:
        for key, item in value.items():
            yield from _json_leaves(item, f"{prefix}.{key}" if prefix else str(key), depth + 1)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield prefix or "value", finite(value)


class _ModbusRequests:
    """Start registers of the last read request per (slave, function), to name response values."""

    def __init__(self) -> None:
        self.start: dict[tuple[int, int], int] = {}

    def values(self, direction: str, parsed: dict[str, Any]) -> Iterable[tuple[str, float]]:
        function, address = parsed.get("function"), parsed.get("address")
        if function not in (3, 4) or not isinstance(address, int):
            return
        try:
            data = bytes.fromhex(str(parsed.get("data", "")))
        except ValueError:
            return
        if direction == "tx" and len(data) == 4:
            self.start[(address, function)] = int.from_bytes(data[:2], "big")
            return
        if direction == "rx" and data and data[0] == len(data) - 1 and data[0] % 2 == 0:
            base = self.start.get((address, function))
            for i in range(data[0] // 2):
                reg = f"reg{base + i:#06x}" if base is not None else f"value{i}"
                yield f"slave{address}.{reg}", float(int.from_bytes(data[1 + 2 * i : 3 + 2 * i], "big"))


def _binary_message(parsed: dict[str, Any]) -> Iterable[_Leaf]:
    name, values = parsed.get("name"), parsed.get("fields")
    if not isinstance(name, str) or not isinstance(values, dict):
        return
    for key, value in values.items():
        if isinstance(value, int | float) and not isinstance(value, bool) and not _SKIPPED_KEY.search(key):
            yield f"{name}.{key}", finite(value)  # a NaN float field decodes to None


def extract_series(
    frames: Iterable[tuple[float, str, dict[str, Any], bool | None]],
) -> tuple[dict[str, Series], int]:
    """(every numeric series found in ``(t, direction, parsed, checksum_valid)`` frames, by name;
    how many numeric values no float holds were left out as missing)."""
    out: dict[str, Series] = {}
    not_finite = 0
    modbus = _ModbusRequests()
    for t, direction, parsed, valid in frames:
        if valid is False:
            continue
        kind = parsed.get("kind")
        pairs: Iterable[_Leaf]
        if kind == "sentence":
            pairs = nmea_values(parsed)
        elif parsed.get("protocol") in ("ubx", "rtcm3") and kind != "invalid":
            pairs = _binary_message(parsed)
        elif kind == "json":
            pairs = _json_leaves(parsed.get("value"), "")
        elif kind == "modbus":
            pairs = modbus.values(direction, parsed)
        elif kind == "response" and isinstance(parsed.get("values"), list):
            cmd = parsed.get("command")
            numbers = [(i, _number(v)) for i, v in enumerate(parsed["values"])]
            pairs = [(f"{cmd}.{i}", n) for i, n in numbers if n is not None]
        else:
            continue
        for name, value in pairs:
            if value is None:
                not_finite += 1
                continue
            series = out.get(name)
            if series is None:
                if len(out) >= _MAX_SERIES:
                    continue
                series = out[name] = Series(name)
            series.t.append(round(t, 6))
            series.v.append(value)
    return out, not_finite


def _matches(name: str, wanted: str) -> bool:
    return name == wanted or name.rsplit(".", 1)[-1] == wanted


def choose_series(
    found: dict[str, Series], fields: Sequence[str] | None, limit: int = DEFAULT_PLOTS
) -> tuple[list[Series], list[str]]:
    """(series to plot, names asked for that matched nothing)."""
    if fields:
        chosen = [s for s in found.values() if any(_matches(s.name, w) for w in fields)]
        missing = [w for w in fields if not any(_matches(name, w) for name in found)]
        return chosen, missing
    varying = [s for s in found.values() if len(s.v) >= 2 and min(s.v) != max(s.v)]
    rank = {name: i for i, name in enumerate(_PREFERRED)}
    varying.sort(key=lambda s: (rank.get(s.name, len(rank)), -len(s.v), s.name))
    return varying[:limit], []
