"""Do the optimised decoders emit exactly what the pre-optimisation code emits (``bench/legacy.py``)?

Feeds every NMEA, GNSS and sensor stream (plus mutated copies: flipped bytes, binary garbage,
torn sentences) to the old and the new nmea0183 pipeline, gnss demux and binary framing, in
several chunkings, and compares frames (data, offsets, checksum verdict), parsed fields (and
their key order), bytes_skipped, frames_dropped and pending_start. Exits 1 on a difference.
One change is meant (issue 26.8): a stray ``$``/``!`` (no ``*hh``, no sentence head) the old code
framed is skipped now, so the old output is compared with those frames counted as skipped.

    python bench/check_decode_equivalence.py [--mutations 300]
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable
from typing import Any

from bench_decode import DATA, GNSS, SENSOR, _sensor_stream
from legacy import decode_old, gnss_old, line_old, nmea_old, scan_old

from serial_mcp.core.decode import StreamDecoder
from serial_mcp.core.framing import build_decoder
from serial_mcp.core.framing.binary import BinaryDecoder
from serial_mcp.core.framing.gnss import GnssDecoder, looks_like_sentence
from serial_mcp.core.framing.line import LineDecoder
from serial_mcp.core.presets import get_preset

CHUNKS = (1, 7, 64, 1000, 65536)


def _events(decoder: Any, stream: bytes, chunk: int) -> tuple[list[tuple[Any, ...]], tuple[int, ...]]:
    out: list[Any] = []
    for i in range(0, len(stream), chunk):
        out.extend(decoder.feed(stream[i : i + chunk]))
    out.extend(decoder.flush())
    rows = []
    for e in out:
        parsed = getattr(e, "parsed", None)
        keys = tuple(parsed) if isinstance(parsed, dict) else None
        fields = tuple(
            getattr(e, f, None)
            for f in ("data", "start", "end", "checksum_valid", "final", "message", "offset")
        )
        rows.append((type(e).__name__, fields, parsed, keys))
    counters = (
        getattr(decoder, "bytes_skipped", 0),
        getattr(decoder, "frames_dropped", 0),
        decoder.pending_start,
    )
    return rows, counters


def _without_strays(
    result: tuple[list[tuple[Any, ...]], tuple[int, ...]], stream: bytes, lines: bool
) -> tuple[list[tuple[Any, ...]], tuple[int, ...]]:
    """The old code's output as issue 26.8 changed it: a ``$``/``!`` frame with no ``*hh`` and no
    sentence head (``$>"``, ``!3``) found in binary data is no frame any more; its bytes are skipped
    instead. (``lines``: nmea0183, where only a sentence cut out of a line after binary bytes is
    concerned; a line of plain text stays a line.)"""
    rows, (skipped, dropped, pending) = result
    kept = []
    for row in rows:
        data, start = row[1][0], row[1][1]
        if isinstance(data, bytes) and data[:1] in (b"$", b"!"):
            body = data.rstrip(b"\r\n")
            line_start = max(stream.rfind(b"\n", 0, start), stream.rfind(b"\r", 0, start)) + 1
            if not looks_like_sentence(body, 0, len(body)) and (not lines or start > line_start):
                skipped += row[1][2] - row[1][1]
                continue
        kept.append(row)
    return kept, (skipped, dropped, pending)


def _pairs() -> list[tuple[str, Callable[[], Any], Callable[[], Any]]]:
    preset = get_preset("nmea0183")
    sensor = build_decoder(SENSOR)
    assert isinstance(sensor, BinaryDecoder)
    lines: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
        (
            f"line auto inc={inc:d} skip={skip:d} max={limit}",
            lambda inc=inc, skip=skip, limit=limit: LineDecoder("auto", inc, skip, max_length=limit),
            lambda inc=inc, skip=skip, limit=limit: line_old.LineDecoder("auto", inc, skip, max_length=limit),
        )
        for inc in (False, True)
        for skip in (False, True)
        for limit in (40, 1 << 20)
    ]
    return [
        *lines,
        (
            "nmea0183",
            lambda: StreamDecoder(preset.get("rx_framing"), preset.get("rx_parser")),
            lambda: decode_old.StreamDecoder(gnss_old.NmeaLineDecoder(), nmea_old.NmeaParser(True)),
        ),
        (
            "nmea0183 unvalidated",
            lambda: StreamDecoder({"type": "nmea"}, {"type": "nmea"}),
            lambda: decode_old.StreamDecoder(gnss_old.NmeaLineDecoder(), nmea_old.NmeaParser(False)),
        ),
        (
            "gnss",
            lambda: StreamDecoder({"type": "gnss"}),
            lambda: decode_old.StreamDecoder(gnss_old.GnssDecoder()),
        ),
        ("gnss raw", GnssDecoder, gnss_old.GnssDecoder),
        ("binary", lambda: build_decoder(SENSOR), lambda: scan_old.ScanDecoder([sensor.layout])),
    ]


def _mutate(rng: random.Random, stream: bytes) -> bytes:
    data = bytearray(stream[: rng.randrange(1, min(len(stream), 20000) + 1)])
    for _ in range(rng.randrange(1, 12)):
        kind = rng.randrange(4)
        at = rng.randrange(len(data) + 1)
        if kind == 0 and data:
            data[min(at, len(data) - 1)] = rng.randrange(256)
        elif kind == 1:
            data[at:at] = rng.randbytes(rng.randrange(1, 40))
        elif kind == 2:
            data[at:at] = rng.choice(
                [b"$", b"!", b"*", b"\r", b"\n", b"\r\n", b"\xb5\x62", b"\xd3\x00", b"$$", b"\xaa\x55"]
            )
        else:
            del data[at : at + rng.randrange(1, 30)]
    return bytes(data)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mutations", type=int, default=300, help="mutated streams per case (default 300)")
    args = parser.parse_args()
    nmea = b"".join(p.read_bytes() for p in sorted((DATA / "nmea").glob("*")))
    gnss = b"".join(p.read_bytes() for p in sorted(GNSS.glob("*.log"))) if GNSS.exists() else b""
    streams = {"nmea": nmea, "gnss": gnss, "sensor": _sensor_stream(200_000)}
    rng = random.Random(14)
    failures = 0
    for name, new, old in _pairs():
        for sname, stream in streams.items():
            if not stream:
                continue
            cases = [(c, stream) for c in CHUNKS] + [
                (rng.choice(CHUNKS[:4]), _mutate(rng, stream)) for _ in range(args.mutations)
            ]
            for chunk, data in cases:
                was = _events(old(), data, chunk)
                if name.startswith(("nmea0183", "gnss")):
                    was = _without_strays(was, data, name.startswith("nmea0183"))
                if _events(new(), data, chunk) != was:
                    failures += 1
                    print(f"DIFF {name} on {sname} (chunk {chunk}, {len(data)} B)")
            print(f"{name:<22} {sname:<7} {len(cases)} streams compared")
    print("identical" if not failures else f"{failures} differences")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
