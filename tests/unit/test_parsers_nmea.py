"""NMEA 0183 / AIS parser and encoder against real receiver logs (gpsd test corpus)."""

from __future__ import annotations

import json
import re
from functools import reduce
from pathlib import Path

import pytest

from serial_mcp.core.decode import DecodedFrame, StreamDecoder
from serial_mcp.core.parsers import NmeaParser, nmea_encode
from serial_mcp.core.presets import get_preset
from serial_mcp.errors import InvalidArgument

NMEA_DIR = Path(__file__).parents[1] / "data" / "nmea"
LOGS = sorted(NMEA_DIR.iterdir())
CHECKSUMMED = re.compile(rb"^\$?[$!]([^*\r\n]*)\*([0-9A-Fa-f]{2})")


def independent_count(data: bytes) -> dict[str, int]:
    """Count lines, good and bad ``*HH`` sentences, and sentences without checksum, by plain regex."""
    lines = [line for line in re.split(rb"\r\n|\r|\n", data) if line]
    good = bad = unchecked = 0
    for line in lines:
        m = CHECKSUMMED.match(line)
        if m:
            xor = reduce(lambda acc, byte: acc ^ byte, m.group(1), 0)
            if xor == int(m.group(2), 16):
                good += 1
            else:
                bad += 1
        elif line[:1] in (b"$", b"!"):
            unchecked += 1
    return {"lines": len(lines), "good": good, "bad": bad, "unchecked": unchecked}


def decode_log(data: bytes, chunk: int | None = None) -> tuple[list[DecodedFrame], int]:
    preset = get_preset("nmea0183")
    decoder = StreamDecoder(preset.get("rx_framing"), preset.get("rx_parser"))
    if chunk is None:
        events = decoder.feed(data)
    else:
        events = [e for i in range(0, len(data), chunk) for e in decoder.feed(data[i : i + chunk])]
    events += decoder.flush()
    frames = [e for e in events if isinstance(e, DecodedFrame)]
    assert len(frames) == len(events)  # line framing never reports errors here
    return frames, decoder.frames_dropped


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
@pytest.mark.parametrize("chunk", [None, 1, 100])
@pytest.mark.slow
def test_real_logs_frames_and_drops_match_an_independent_count(path: Path, chunk: int | None) -> None:
    data = path.read_bytes()
    expected = independent_count(data)
    frames, dropped = decode_log(data, chunk)
    assert dropped == expected["bad"]
    assert len(frames) == expected["lines"] - expected["bad"]
    assert sum(f.checksum_valid is True for f in frames) == expected["good"]
    unchecked = [
        f for f in frames if f.parsed and f.parsed["kind"] in ("sentence", "ais") and f.checksum_valid is None
    ]
    assert len(unchecked) == expected["unchecked"]  # sentences without checksum are accepted
    assert all(f.checksum_valid is not False for f in frames)
    json.dumps([f.parsed for f in frames])


@pytest.mark.parametrize(
    ("name", "good", "bad", "unchecked"),
    [
        ("gpsdf.log", 1455, 46, 0),  # 46 $PGLOR sentences with wrong checksums: a real device bug
        ("st-teseo-liv4f.log", 329, 1, 0),  # one $GPGSV with a bad checksum
        ("quectel-l76k-nmea.log", 2280, 0, 0),
        ("garmin48.log", 91, 0, 1),
        ("mtk-3301.log", 56, 0, 3),
        ("skytraq-err.log", 0, 0, 6),
    ],
)
def test_published_facts_about_the_logs(name: str, good: int, bad: int, unchecked: int) -> None:
    counts = independent_count((NMEA_DIR / name).read_bytes())
    assert (counts["good"], counts["bad"], counts["unchecked"]) == (good, bad, unchecked)
    _, dropped = decode_log((NMEA_DIR / name).read_bytes())
    assert dropped == bad


def test_gpsdf_drops_exactly_the_46_pglor_sentences() -> None:
    data = (NMEA_DIR / "gpsdf.log").read_bytes()
    _, dropped = decode_log(data)
    assert dropped == 46
    preset = get_preset("nmea0183")
    lenient = StreamDecoder(preset.get("rx_framing"), {"type": "nmea", "validate": False})
    kept = [e for e in lenient.feed(data) if isinstance(e, DecodedFrame)]
    bad = [f for f in kept if f.checksum_valid is False]
    assert len(bad) == 46 and lenient.frames_dropped == 0
    assert {f.parsed["address"] for f in bad if f.parsed} == {"PGLOR"}


def test_st_teseo_double_dollar_sentences_parse() -> None:
    data = (NMEA_DIR / "st-teseo-liv4f.log").read_bytes()
    frames, _ = decode_log(data)
    sentences = [f for f in frames if f.data.startswith(b"$$")]
    assert len(sentences) == data.count(b"\n$$") + data.startswith(b"$$") - 1  # minus the bad one
    assert all(f.parsed and f.parsed["kind"] == "sentence" and f.checksum_valid for f in sentences)
    assert {f.parsed["talker"] for f in sentences if f.parsed} >= {"GN", "GP"}
    proprietary = [f.parsed for f in sentences if f.parsed and f.parsed["talker"] == "P"]
    assert proprietary and all(p["manufacturer"] == "STM" for p in proprietary)


def test_comment_lines_are_other() -> None:
    parsed = NmeaParser().parse(b"# Name: Garmin 48")
    assert parsed.fields == {"kind": "other", "text": "# Name: Garmin 48"}
    assert parsed.checksum_valid is None


def test_sentence_fields() -> None:
    parsed = NmeaParser().parse(b"$GPGGA,125106,3854.5087,N,07726.4523,W,8,10,2.0,268.8,M,-33.9,M,,*7F\r\n")
    assert parsed.checksum_valid is True
    assert parsed.fields["kind"] == "sentence"
    assert (parsed.fields["talker"], parsed.fields["sentence"]) == ("GP", "GGA")
    assert parsed.fields["fields"][:3] == ["125106", "3854.5087", "N"]
    assert parsed.fields["fields"][-1] == ""
    assert parsed.fields["checksum"] == "7F"


def test_proprietary_sentence() -> None:
    parsed = NmeaParser().parse(b"$PGRME,15.0,M,45.0,M,25.0,M*1C")
    assert parsed.fields["talker"] == "P"
    assert parsed.fields["manufacturer"] == "GRM"
    assert parsed.fields["sentence"] == "E"


def test_ais_sentence_with_receiver_metadata_after_the_checksum() -> None:
    parsed = NmeaParser().parse(b"!AIVDM,1,1,,B,:6TMCD1GOS60,0*5B,s36310,d-081,T59.01777335")
    assert parsed.checksum_valid is True
    assert parsed.fields["kind"] == "ais"
    assert parsed.fields["ais"] == {
        "fragment_count": 1,
        "fragment_number": 1,
        "message_id": "",
        "channel": "B",
        "payload": ":6TMCD1GOS60",
        "fill_bits": 0,
    }
    assert parsed.fields["trailer"] == ",s36310,d-081,T59.01777335"


def test_bad_and_missing_and_truncated_checksums() -> None:
    assert NmeaParser().parse(b"$GPGLL,1*00").checksum_valid is False
    assert NmeaParser().parse(b"$STI,IC,error=4").checksum_valid is None
    truncated = NmeaParser().parse(b"$GPGSV,3,1,11,01,78,221,47*7")
    assert truncated.checksum_valid is None and truncated.fields["checksum"] is None
    assert NmeaParser().parse(b"$SDDBT,7.7,f,2.3,M,1.3,F*05").checksum_valid is True
    assert NmeaParser().parse(b"$sddbt,7.7,f,2.3,M,1.3,F*05").checksum_valid is False


def test_lowercase_checksum_digits_accepted() -> None:
    assert NmeaParser().parse(b"$GPGLL,5119.881,N,00125.169,E,164326,A,D*1d").fields["checksum"] == "1D"


# --- TX ------------------------------------------------------------------------------------------


def test_encode_appends_checksum_and_crlf() -> None:
    assert nmea_encode(b"$SDDBT,7.7,f,2.3,M,1.3,F") == b"$SDDBT,7.7,f,2.3,M,1.3,F*05\r\n"
    assert nmea_encode("SDDBT,7.7,f,2.3,M,1.3,F") == b"$SDDBT,7.7,f,2.3,M,1.3,F*05\r\n"
    assert (
        nmea_encode(b"!AIVDM,1,1,,A,15RTgt0PAso;90TKcjM8h6g208CQ,0")
        == b"!AIVDM,1,1,,A,15RTgt0PAso;90TKcjM8h6g208CQ,0*4A\r\n"
    )


def test_encode_verifies_an_existing_checksum() -> None:
    assert nmea_encode(b"$SDDBT,7.7,f,2.3,M,1.3,F*05\r\n") == b"$SDDBT,7.7,f,2.3,M,1.3,F*05\r\n"
    with pytest.raises(InvalidArgument, match=r"\*06 does not match .* \*05"):
        nmea_encode(b"$SDDBT,7.7,f,2.3,M,1.3,F*06")
    with pytest.raises(InvalidArgument, match="two hex digits"):
        nmea_encode(b"$SDDBT,7.7*5")
    with pytest.raises(InvalidArgument, match="line break"):
        nmea_encode(b"$A,1\r\n$B,2")
    with pytest.raises(InvalidArgument, match="ASCII"):
        nmea_encode("$GPTXT,é")


@pytest.mark.parametrize("path", [NMEA_DIR / "sounder.log", NMEA_DIR / "quectel-l76k-nmea.log"], ids=str)
def test_encode_reproduces_every_good_sentence_of_a_log(path: Path) -> None:
    for line in path.read_bytes().splitlines():
        m = CHECKSUMMED.match(line)
        if m and not line.startswith(b"$$"):
            body = line[: line.index(b"*")]
            wire = body + b"*" + m.group(2).upper() + b"\r\n"
            assert nmea_encode(body) == wire
            assert nmea_encode(line) == wire
