"""Decode throughput of the sans-IO pipeline on real device data, beside a plain ``bytes.split``.

Not a test: prints a table. Each case builds a stream from the real captures in
``tests/data`` (boot logs, NMEA logs; for SLIP/COBS the lines of those logs are encoded
as packets), repeats it to ``--size-mb``, feeds it in ``--chunk``-byte reads (as the RX
engine would) and times the decoder. The baseline splits the same bytes on the same
terminator with one ``bytes.split`` call: the ceiling for pure-Python framing (for the binary
sensor frames: a ``struct`` walk from length field to length field, without sync search or CRC).
The GNSS cases use gpsd's u-blox / RTCM3 logs in ``tests/data/gnss``.
Rows marked "(old)" time the pre-optimisation code loaded from git by ``bench/legacy.py`` on the same
stream in the same run (the machine may be loaded: compare rows of one run, not runs), and
the bench first checks that old and new emit exactly the same frames.

    python bench/bench_decode.py [--size-mb 50] [--chunk 65536] [--repeat 3]
"""

from __future__ import annotations

import argparse
import random
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from legacy import decode_old, gnss_old, nmea_old, scan_old

from serial_mcp.core.decode import DecodedFrame, StreamDecoder
from serial_mcp.core.framing import build_decoder, build_encoder
from serial_mcp.core.framing.binary import BinaryDecoder
from serial_mcp.core.presets import get_preset

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
GNSS = Path(__file__).resolve().parents[1] / "tests" / "data" / "gnss"
SENSOR = {
    "type": "binary",
    "sync": "AA55",
    "length": {"offset": 2, "size": 1},
    "checksum": {"algorithm": "crc16_modbus", "endianness": "little"},
}


@dataclass
class Case:
    """One benchmark: a stream, how to decode it, and what a plain split would cut it on."""

    name: str
    stream: bytes
    decode: Callable[[bytes, int], int]  # (stream, chunk) -> frames emitted
    separator: bytes
    baseline: Callable[[bytes], int] | None = None  # default: one bytes.split on the separator


def _repeat(sample: bytes, size: int) -> bytes:
    return sample * max(1, size // len(sample))


def _frame_decoder(config: dict[str, Any]) -> Callable[[bytes, int], int]:
    def run(stream: bytes, chunk: int) -> int:
        decoder = build_decoder(config)
        return sum(len(decoder.feed(stream[i : i + chunk])) for i in range(0, len(stream), chunk))

    return run


def _pipeline(preset_name: str) -> Callable[[bytes, int], int]:
    preset = get_preset(preset_name)

    def run(stream: bytes, chunk: int) -> int:
        decoder = StreamDecoder(preset.get("rx_framing"), preset.get("rx_parser"))
        count = 0
        for i in range(0, len(stream), chunk):
            count += sum(isinstance(e, DecodedFrame) for e in decoder.feed(stream[i : i + chunk]))
        return count

    return run


def _old_nmea_pipeline(stream: bytes, chunk: int) -> int:
    """The nmea0183 preset (nmea framing + validating nmea parser) before the throughput work."""
    decoder = decode_old.StreamDecoder(gnss_old.NmeaLineDecoder(), nmea_old.NmeaParser(True))
    count = 0
    for i in range(0, len(stream), chunk):
        count += sum(isinstance(e, decode_old.DecodedFrame) for e in decoder.feed(stream[i : i + chunk]))
    return count


def _old_scan(make: Callable[[], Any]) -> Callable[[bytes, int], int]:
    def run(stream: bytes, chunk: int) -> int:
        decoder = make()
        return sum(len(decoder.feed(stream[i : i + chunk])) for i in range(0, len(stream), chunk))

    return run


def _old_sensor_decoder() -> scan_old.ScanDecoder:
    layout = build_decoder(SENSOR)
    assert isinstance(layout, BinaryDecoder)
    return scan_old.ScanDecoder([layout.layout])


def _walk_sensor_frames(stream: bytes) -> int:
    """Baseline for binary framing: hop from frame to frame with struct, no sync search, no CRC."""
    unpack = struct.Struct("<2sB").unpack_from
    pos = count = 0
    n = len(stream)
    while pos + 3 <= n:
        _sync, length = unpack(stream, pos)
        pos += 5 + length
        count += 1
    return count


def _sensor_stream(size: int) -> bytes:
    """The issue's AA 55 LEN PAYLOAD CRC16 frames (16-200 byte payloads), 1% with garbage after."""
    rng = random.Random(14)
    encoder = build_encoder(SENSOR)
    frames = []
    for _ in range(2000):
        frames.append(encoder.encode(rng.randbytes(rng.randrange(16, 200))))
    return _repeat(b"".join(frames), size)


def _lines(paths: list[Path]) -> list[bytes]:
    return [line for p in paths for line in p.read_bytes().splitlines() if line]


def build_cases(size: int) -> list[Case]:
    bootlogs = sorted((DATA / "bootlogs").glob("*/*"))
    nmea_logs = sorted((DATA / "nmea").glob("*"))
    boot = b"".join(p.read_bytes() for p in bootlogs)
    nmea = b"".join(p.read_bytes() for p in nmea_logs)
    packets = _lines(bootlogs + nmea_logs)
    slip = b"".join(build_encoder({"type": "slip"}).encode(p) for p in packets)
    cobs = b"".join(build_encoder({"type": "cobs"}).encode(p) for p in packets)
    return [
        Case("line auto (boot logs)", _repeat(boot, size), _frame_decoder({"type": "line"}), b"\n"),
        Case(
            "line lf (NMEA logs)",
            _repeat(nmea, size),
            _frame_decoder({"type": "line", "ending": "lf"}),
            b"\n",
        ),
        Case("nmea0183 preset (NMEA logs)", _repeat(nmea, size), _pipeline("nmea0183"), b"\n"),
        Case("nmea0183 preset (old)", _repeat(nmea, size), _old_nmea_pipeline, b"\n"),
        Case("slip (log lines as packets)", _repeat(slip, size), _frame_decoder({"type": "slip"}), b"\xc0"),
        Case("cobs (log lines as packets)", _repeat(cobs, size), _frame_decoder({"type": "cobs"}), b"\x00"),
        Case(
            "binary AA55+CRC16 (sensor)",
            _sensor_stream(size),
            _frame_decoder(SENSOR),
            b"\xaa\x55",
            _walk_sensor_frames,
        ),
        Case(
            "binary AA55+CRC16 (old)",
            _sensor_stream(size),
            _old_scan(_old_sensor_decoder),
            b"\xaa\x55",
            _walk_sensor_frames,
        ),
        *_gnss_cases(size),
    ]


def _gnss_cases(size: int) -> list[Case]:
    logs = sorted(GNSS.glob("*.log")) if GNSS.exists() else []
    if not logs:
        return []
    gnss = _repeat(b"".join(p.read_bytes() for p in logs), size)
    return [
        Case("gnss demux (u-blox logs)", gnss, _frame_decoder({"type": "gnss"}), b"\n"),
        Case("gnss demux (old)", gnss, _old_scan(gnss_old.GnssDecoder), b"\n"),
        Case("gnss preset +pyubx2/pyrtcm", gnss[: max(1, size // 10)], _pipeline("gnss"), b"\n"),
    ]


def best_time(fn: Callable[[], int], repeat: int) -> tuple[float, int]:
    best = float("inf")
    result = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size-mb", type=float, default=50.0, help="stream size per case in MB (default 50)")
    parser.add_argument("--chunk", type=int, default=65536, help="bytes per feed() call (default 65536)")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per measurement; the best is kept (default 3)"
    )
    args = parser.parse_args()
    size = int(args.size_mb * 1_000_000)

    header = (
        f"{'case':<30} {'MB':>6} {'frames':>10} {'decode MB/s':>12} {'frames/s':>12} "
        f"{'split MB/s':>11} {'split/decode':>13}"
    )
    print(f"chunk {args.chunk} B, best of {args.repeat}")
    print(header.replace("split", "base "))
    print("-" * len(header))
    for case in build_cases(size):
        stream = case.stream
        mb = len(stream) / 1e6
        seconds, frames = best_time(lambda c=case, s=stream: c.decode(s, args.chunk), args.repeat)
        baseline = case.baseline or (lambda s, sep=case.separator: len(s.split(sep)))
        base_seconds, _ = best_time(lambda s=stream, b=baseline: b(s), args.repeat)
        print(
            f"{case.name:<30} {mb:>6.1f} {frames:>10,} {mb / seconds:>12.1f} {frames / seconds:>12,.0f} "
            f"{mb / base_seconds:>11.0f} {seconds / base_seconds:>12.1f}x"
        )


if __name__ == "__main__":
    main()
