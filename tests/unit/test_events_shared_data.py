"""Issue 24 (must hold): no false positive on real noise, read from the project's real data set, copied
byte-exact into tests/data (tests/data/SOURCES.md), so a clone runs it without anything beside it.

Every NMEA log, binary GNSS capture (u-blox UBX, RTCM 3) and gpsd's decoded ``.chk`` output gives no event
at all; each OpenWrt boot log gives no crash, reset or boot loop; the ESP32 log gives exactly its two boots,
the second with its watchdog reset reason; and cutting the noise into chunks anywhere changes nothing.
tests/unit/test_events_detector.py checks some of the same logs chunk by chunk; this module checks them all.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from serial_mcp.core.events import Event, EventDetector

SHARED = Path(__file__).resolve().parents[1] / "data"


def _files(*globs: str) -> list[Path]:
    return sorted(p for g in globs for p in SHARED.glob(g) if p.is_file()) if SHARED.is_dir() else []


NMEA = _files("nmea/*")
GNSS_BINARY = _files("gnss/*.log")
GNSS_DECODED = _files("gnss/*.chk", "jsonlines/*.chk")
OPENWRT = _files("bootlogs/openwrt-*/*")
ESP32 = SHARED / "bootlogs/esp32/esp32-mdf-boot.txt"
ALARMS = ("crash", "reset", "boot_loop")


def run(data: bytes) -> list[Event]:
    detector = EventDetector()
    return detector.feed(data, 0, 0.0) + detector.flush()


def test_the_shared_set_is_all_there() -> None:
    # 12 NMEA/AIS logs, 8 GNSS receiver captures (5 binary) and their 8 gpsd decodes (+ 1 JSON lines), 3 OpenWrt logs
    assert (len(NMEA), len(GNSS_BINARY), len(GNSS_DECODED), len(OPENWRT)) == (12, 8, 9, 3)
    framed = [p.name for p in GNSS_BINARY if b"\xb5\x62" in (d := p.read_bytes()) or b"\xd3\x00" in d]
    assert len(framed) == 5, framed  # UBX (B5 62) or RTCM 3 (D3 00) frames; the other three are NMEA text


@pytest.mark.parametrize("path", NMEA + GNSS_BINARY + GNSS_DECODED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_event_at_all_in_gnss_noise(path: Path) -> None:
    assert run(path.read_bytes()) == []


@pytest.mark.parametrize("path", OPENWRT, ids=lambda p: p.parent.name)
def test_an_openwrt_boot_log_has_no_crash_and_is_one_boot(path: Path) -> None:
    events = run(path.read_bytes())
    assert [e for e in events if e.kind in ALARMS] == []
    assert [e.kind for e in events].count("boot") == 1  # U-Boot, then Linux as its stages


def test_the_esp32_log_gives_its_two_boots_the_second_a_watchdog_reset() -> None:
    data = ESP32.read_bytes()
    events = run(data)
    assert [e for e in events if e.kind in ALARMS] == []
    boots = [e for e in events if e.kind == "boot"]
    assert [(e.offset, e.reason) for e in boots] == [
        (data.index(b"ets Jun"), "POWERON_RESET"),
        (data.index(b"ets Jun", data.index(b"ets Jun") + 1), "RTCWDT_RTC_RESET"),
    ]
    assert boots[1].detail["rst_code"] == "0x10"  # rst:0x10 (RTCWDT_RTC_RESET): the RTC watchdog


# All the noise back to back (binary GNSS between text logs, so lines straddle the joins), cut anywhere.
NOISE = b"".join(p.read_bytes() for p in [*NMEA, *GNSS_BINARY, *OPENWRT]) if SHARED.is_dir() else b""
NOISE_EVENTS = run(NOISE)


def test_the_noise_back_to_back_has_no_crash() -> None:
    assert [e for e in NOISE_EVENTS if e.kind in ("crash", "reset")] == []
    # the three OpenWrt boots, fed at one instant, are a boot loop by the policy (3 boots within 30 s)
    assert [e.kind for e in NOISE_EVENTS if e.kind in ("boot", "boot_loop")] == ["boot"] * 3 + ["boot_loop"]


@settings(max_examples=25, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=1 << 24), max_size=200))
def test_any_chunking_of_the_noise_gives_the_same_events(cuts: list[int]) -> None:
    bounds = sorted({0, len(NOISE), *(c % (len(NOISE) + 1) for c in cuts)})
    detector = EventDetector()
    got: list[Event] = []
    for lo, hi in itertools.pairwise(bounds):
        got += detector.feed(NOISE[lo:hi], lo, 0.0)
    assert got + detector.flush() == NOISE_EVENTS
