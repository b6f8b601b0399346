"""Issue 26.8: a ``$``/``!`` inside binary GNSS data that starts no sentence is never an NMEA frame.

Real streams: gpsd's u-blox / RTCM3 logs (``tests/data/gnss``), whose ``.chk`` files hold gpsd's own decoded
output.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest

from serial_mcp.core.decode import DecodedFrame, StreamDecoder
from serial_mcp.core.framing.gnss import UBX_LAYOUT
from serial_mcp.core.parsers import nmea_encode
from serial_mcp.core.presets import get_preset

SHARED = Path(__file__).resolve().parents[1] / "data"  # copies of the project's data set (tests/data/SOURCES.md)
LOGS = sorted((SHARED / "gnss").glob("*.log"))
assert LOGS, f"the GNSS logs are missing from {SHARED / 'gnss'}"
needs_data = pytest.mark.usefixtures()  # the logs are in the repository: nothing to skip


def decode(data: bytes, protocol: str, chunk: int = 4096) -> tuple[list[DecodedFrame], StreamDecoder]:
    preset = get_preset(protocol)
    decoder = StreamDecoder(preset.get("rx_framing"), preset.get("rx_parser"))
    events: list[Any] = []
    for i in range(0, len(data), chunk):
        events += decoder.feed(data[i : i + chunk])
    events += decoder.flush()
    return [e for e in events if isinstance(e, DecodedFrame)], decoder


def sentences(frames: list[DecodedFrame]) -> list[DecodedFrame]:
    return [f for f in frames if f.data[:1] in (b"$", b"!")]


def with_losses(data: bytes, seed: int, spans: int = 40, size: int = 20) -> bytes:
    """The stream with ``spans`` pieces of ``size`` bytes lost, as an overrun loses them."""
    rng = random.Random(seed)
    out = bytearray(data)
    for _ in range(spans):
        i = rng.randrange(len(out))
        del out[i : i + size]
    return bytes(out)


SENTENCE_HEAD = re.compile(rb"[$!][A-Z][A-Z0-9]{2,},")
STRAYS = [b'$>"\r\n', b"$\n", b"!3\n", b"!Cp\r\n", b"$GP\r\n", b"$,1,2\n", b"!d6\r"]


@pytest.mark.parametrize("protocol", ["gnss", "nmea0183"])
@pytest.mark.parametrize("stray", STRAYS, ids=[s.decode("latin-1").strip() or "$" for s in STRAYS])
def test_a_stray_sync_in_binary_data_is_skipped_and_counted(protocol: str, stray: bytes) -> None:
    ubx = UBX_LAYOUT.build(bytes.fromhex("0107") + bytes(range(92)))  # a NAV-PVT-sized frame
    gga = nmea_encode("GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,")
    garbage = b"\x00\xb5\x01\x87" + stray
    frames, decoder = decode(ubx + garbage + gga + ubx, protocol)
    assert [f.data for f in sentences(frames)] == [gga.rstrip(b"\r\n")]
    assert decoder.bytes_skipped >= len(stray.rstrip(b"\r\n"))
    if protocol == "gnss":
        assert [f.data for f in frames] == [ubx, gga.rstrip(b"\r\n"), ubx]
        assert decoder.bytes_skipped == len(garbage)


def test_a_sentence_without_checksum_is_still_a_sentence() -> None:
    # real receivers send some (gpsd's garmin48 and mtk-3301 logs): the address field says so
    ubx = UBX_LAYOUT.build(bytes.fromhex("0a04"))
    line = b"$PMTK001,604,3\r\n"
    for protocol in ("gnss", "nmea0183"):
        frames, _ = decode(ubx + b"\x00\x01" + line + ubx, protocol)
        assert [f.data for f in sentences(frames)] == [line.rstrip(b"\r\n")]


# nmea0183 frames a line of plain text as line framing does, so a sentence torn by lost bytes into
# printable text stays a (checksum-less) line there; the losses are the gnss framing's case.
CASES = [("nmea0183", None)] + [("gnss", seed) for seed in (None, 1, 2, 3)]


@needs_data
@pytest.mark.parametrize("path", LOGS, ids=[p.name for p in LOGS])
@pytest.mark.parametrize(("protocol", "seed"), CASES)
def test_real_binary_streams_give_only_sentences_gpsd_also_saw(
    path: Path, protocol: str, seed: int | None
) -> None:
    data = path.read_bytes()
    stream = data if seed is None else with_losses(data, seed)
    frames, _ = decode(stream, protocol)
    for f in sentences(frames):
        # a real sentence start, or a *hh field whose checksum gives the verdict (a torn sentence is
        # a bad frame, counted); never a stray ``$``/``!`` with a few bytes and no checksum
        assert SENTENCE_HEAD.match(f.data) or (f.data[-3:-2] == b"*" and f.checksum_valid is not None), f.data
    if seed is None:  # the whole log: exactly the sentences gpsd passed on, each with a good checksum
        gpsd = {line for line in Path(f"{path}.chk").read_bytes().splitlines() if line[:1] in (b"$", b"!")}
        good = [f.data for f in sentences(frames) if f.checksum_valid]
        present = [m.group(0) for m in re.finditer(rb"[$!][^\r\n$!]*", data) if m.group(0) in gpsd]
        assert [g for g in good if g in gpsd] == present  # every sentence gpsd passed on, in order
        assert all(g in data for g in good)  # (gpsd misses one or two at the edges: real sentences)
        others = [f for f in sentences(frames) if not f.checksum_valid]
        assert all(f.checksum_valid is False or f.end >= len(data) - 2 for f in others)  # bad, or cut by EOF
