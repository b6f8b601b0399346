"""GNSS framing and parsing against gpsd's u-blox / RTCM3 logs and its decoded output (.chk files)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from serial_mcp.core import checksums
from serial_mcp.core.decode import DecodedFrame, StreamDecoder
from serial_mcp.core.framing import Frame, build_decoder, build_encoder
from serial_mcp.core.parsers import build_parser
from serial_mcp.core.presets import get_preset

GNSS_DATA = Path(__file__).resolve().parents[1] / "data" / "gnss"
LOGS = sorted(GNSS_DATA.glob("*.log"))  # copies of the project's data set (tests/data/SOURCES.md)
assert LOGS, f"the GNSS logs are missing from {GNSS_DATA}"
needs_data = pytest.mark.usefixtures()  # the logs are in the repository: nothing to skip


def decode(
    data: bytes, chunk: int | None = None, protocol: str = "gnss"
) -> tuple[list[DecodedFrame], StreamDecoder]:
    preset = get_preset(protocol)
    decoder = StreamDecoder(preset.get("rx_framing"), preset.get("rx_parser"))
    events: list[Any] = []
    step = chunk or len(data) or 1
    for i in range(0, len(data), step):
        events += decoder.feed(data[i : i + step])
    events += decoder.flush()
    assert all(isinstance(e, DecodedFrame) for e in events)
    return events, decoder


def chk(path: Path) -> list[str]:
    return Path(f"{path}.chk").read_text().splitlines()


@needs_data
@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
@pytest.mark.slow
def test_rtcm3_messages_match_gpsd(path: Path) -> None:
    frames, _ = decode(path.read_bytes())
    ours = [(f.parsed or {})["type"] for f in frames if (f.parsed or {}).get("protocol") == "rtcm3"]
    gpsd = [json.loads(line)["type"] for line in chk(path) if '"class":"RTCM3"' in line]
    # gpsd reports the last message of ublox-f9p-rtcm.log twice; the log holds it once (one good CRC)
    assert ours == gpsd[: len(ours)] and len(gpsd) - len(ours) <= 1


@needs_data
@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
@pytest.mark.slow
def test_nav_pvt_fixes_are_gpsd_fixes(path: Path) -> None:
    frames, _ = decode(path.read_bytes())
    pvt = [(f.parsed or {})["fields"] for f in frames if (f.parsed or {}).get("name") == "NAV-PVT"]
    tpv = [json.loads(line) for line in chk(path) if line.startswith('{"class":"TPV"')]
    fixes = {(round(t["lat"], 6), round(t["lon"], 6)) for t in tpv if "lat" in t}
    ours = {(round(p["lat"], 6), round(p["lon"], 6)) for p in pvt if p["fixType"] >= 2}
    assert fixes <= ours or not pvt  # every gpsd fix from NAV-PVT data is one of ours
    for p in pvt:
        assert isinstance(p["numSV"], int) and 0 <= p["fixType"] <= 5


@needs_data
@pytest.mark.parametrize("name", ["ublox-zed-f9p-nmea.log", "ublox-lea-5h.log", "ublox-8.log"])
def test_nmea_sentences_match_gpsd(name: str) -> None:
    path = GNSS_DATA / name
    frames, _ = decode(path.read_bytes())
    ours = [f.data.decode() for f in frames if (f.parsed or {}).get("protocol") == "nmea"]
    gpsd = [line for line in chk(path) if line[:1] in ("$", "!")]
    assert ours[: len(gpsd)] == gpsd
    extra = ours[len(gpsd) :]  # ublox-8.log ends with a truncated sentence (no checksum) gpsd ignores
    assert len(extra) <= 1 and all("*" not in s for s in extra)


@needs_data
@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
@pytest.mark.parametrize("chunk", [1, 7, 500])
@pytest.mark.slow
def test_any_chunking_gives_the_same_frames(path: Path, chunk: int) -> None:
    data = path.read_bytes()
    whole, d1 = decode(data)
    pieces, d2 = decode(data, chunk)
    assert [(f.start, f.end, f.data) for f in pieces] == [(f.start, f.end, f.data) for f in whole]
    assert d1.bytes_skipped == d2.bytes_skipped and d1.frames_dropped == d2.frames_dropped


@needs_data
def test_mixed_stream_tags_every_frame_and_accounts_for_every_byte() -> None:
    data = (GNSS_DATA / "ublox-f9p-rtcm.log").read_bytes()
    frames, decoder = decode(data)
    kinds = Counter((f.parsed or {})["protocol"] for f in frames)
    assert kinds == {"ubx": 16, "rtcm3": 15}
    covered = sum(f.end - f.start for f in frames)
    assert covered + decoder.bytes_skipped == len(data)  # nothing dropped, every skipped byte counted
    trailing_newline = len(data) - len(data.rstrip(b"\n"))
    assert decoder.bytes_skipped == data.index(b"\xd3") + trailing_newline  # the log's '#' header


def ubx(cls: int, mid: int, payload: bytes) -> bytes:
    body = bytes([cls, mid]) + len(payload).to_bytes(2, "little") + payload
    return b"\xb5\x62" + body + checksums.compute("ubx", body).to_bytes(2, "little")


def test_bad_checksums_are_dropped_and_counted() -> None:
    good = b"$GPGLL,4916.45,N,12311.12,W,225444,A*31\r\n"
    bad = b"$GPGLL,4916.45,N,12311.12,W,225444,A*32\r\n"
    broken = bytearray(ubx(0x01, 0x07, bytes(92)))
    broken[10] ^= 1
    frames, decoder = decode(good + bad + bytes(broken) + good)
    assert [f.data for f in frames] == [good[:-2], good[:-2]]
    assert decoder.frames_dropped == 2
    assert decoder.bytes_skipped == 0


def test_binary_bytes_never_end_up_in_a_sentence() -> None:
    rmc = b"$GNRMC,001031.00,A,4404.13993,N,12118.86023,W,0.146,,100117,,,A*7B\r\n"
    stream = ubx(0x01, 0x07, bytes(92)) + rmc + b"\x01\x02$\x03" + rmc
    frames, decoder = decode(stream)
    assert [(f.parsed or {})["protocol"] for f in frames] == ["ubx", "nmea", "nmea"]
    assert frames[1].data == rmc[:-2] and frames[2].data == rmc[:-2]
    assert decoder.bytes_skipped == 4


def test_nmea0183_preset_resyncs_on_the_start_character() -> None:
    rmc = b"$GNRMC,001031.00,A,4404.13993,N,12118.86023,W,0.146,,100117,,,A*7B"
    stream = ubx(0x01, 0x07, bytes(20)) + rmc + b"\r\n# a comment, 53\xc2\xb0N\r\n"
    frames, decoder = decode(stream, protocol="nmea0183")
    assert frames[0].data == rmc and frames[0].checksum_valid is True
    assert frames[0].start == len(ubx(0x01, 0x07, bytes(20)))
    assert (frames[1].parsed or {})["kind"] == "other"  # text lines are framed as before
    assert decoder.bytes_skipped == len(ubx(0x01, 0x07, bytes(20)))


def test_ubx_parser_names_and_decodes() -> None:
    frame = ubx(0x05, 0x01, b"\x06\x01")  # ACK-ACK for CFG-MSG
    parsed = build_parser({"type": "ubx"}).parse(frame)
    assert parsed.checksum_valid is True
    assert parsed.fields["name"] == "ACK-ACK" and parsed.fields["fields"]["clsID"] == 6
    assert build_parser({"type": "ubx"}).parse(frame[:-1] + b"\x00").checksum_valid is False


def test_ubx_tx_framing_and_gnss_preset_writes() -> None:
    assert build_encoder({"type": "ubx"}).encode(bytes.fromhex("0601010701")) == bytes.fromhex(
        "B562060103000107011351"
    )
    assert get_preset("gnss").get("tx_framing") == {"type": "ubx"}


def test_ubx_and_rtcm3_only_framings() -> None:
    frame = ubx(0x0A, 0x04, b"")
    events = build_decoder({"type": "ubx"}).feed(b"$GPGLL*00\r\n" + frame)
    assert events == [Frame(frame, 11, 11 + len(frame), True)]


def _feed_in_pieces(config: dict[str, Any], data: bytes, cuts: list[int]) -> tuple[list[Any], int]:
    decoder = build_decoder(config)
    events: list[Any] = []
    prev = 0
    for cut in [*sorted({c % (len(data) + 1) for c in cuts}), len(data)]:
        events += decoder.feed(data[prev:cut])
        prev = cut
    events += decoder.flush()
    return events, getattr(decoder, "bytes_skipped", -1)


@needs_data
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    start=st.integers(0, 6000),
    flips=st.lists(st.tuples(st.integers(0, 2999), st.integers(0, 7)), max_size=8),
    cuts=st.lists(st.integers(0, 3000), max_size=20),
)
@pytest.mark.slow
def test_corrupted_mixed_stream_any_chunking(
    start: int, flips: list[tuple[int, int]], cuts: list[int]
) -> None:
    data = bytearray((GNSS_DATA / "ublox-f9p-rtcm.log").read_bytes()[start : start + 3000])
    for at, bit in flips:
        if at < len(data):
            data[at] ^= 1 << bit
    whole, skipped = _feed_in_pieces({"type": "gnss"}, bytes(data), [])
    pieces, skipped_pieces = _feed_in_pieces({"type": "gnss"}, bytes(data), cuts)
    assert pieces == whole and skipped_pieces == skipped
    assert sum(f.end - f.start for f in whole) + skipped == len(data)
