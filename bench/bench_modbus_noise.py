"""Modbus RTU framing throughput on noise and on real traffic, today's code beside the code before
the resync work (loaded from git at ``BASELINE``), in the same run.

Not a test: prints a table. Each stream is fed in ``--chunk``-byte reads, as the RX engine does;
first the bench checks that old and new emit exactly the same frames (start, end, verdict) and skip
the same bytes on every stream, then times each ``--repeat`` times and prints the best per-byte cost.

Streams: random noise (what a wrong baud rate or a floating line gives: the resync worst case);
request/response traffic of every length-aware function (pymodbus-style reads and writes); frames
of functions whose length the framing cannot know (user-defined 0x41, 0x64) back to back; and that
traffic with noise bursts between the frames.

    python bench/bench_modbus_noise.py [--kib 256] [--chunk 4096] [--repeat 3]
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from serial_mcp.core.framing.modbus_rtu import ModbusRtuDecoder, modbus_rtu_encode

BASELINE = "6dd3a71"  # main before the issue 28 Modbus resync work
ROOT = Path(__file__).resolve().parents[1]


def load_old() -> Callable[[], Any]:
    """The old ModbusRtuDecoder class (its scan engine loaded from the same commit)."""
    modules = {}
    for name, path in (
        ("scan", "serial_mcp/core/framing/scan.py"),
        ("modbus_rtu", "serial_mcp/core/framing/modbus_rtu.py"),
    ):
        source = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{BASELINE}:{path}"], capture_output=True, text=True, check=True
        ).stdout
        source = source.replace("from serial_mcp.core.framing.scan import", "from old_scan import")
        module = types.ModuleType(f"old_{name}")
        module.__file__ = f"{BASELINE}:{path}"
        sys.modules[module.__name__] = module
        exec(compile(source, module.__file__, "exec"), module.__dict__)  # our own code, at a commit
        modules[name] = module
    cls: Callable[[], Any] = modules["modbus_rtu"].ModbusRtuDecoder
    return cls


def traffic(rng: random.Random, size: int) -> bytes:
    out = bytearray()
    while len(out) < size:
        unit = rng.randrange(1, 248)
        regs = rng.randrange(1, 60)
        out += modbus_rtu_encode(bytes([unit, 3, 0, rng.randrange(256), 0, regs]))
        out += modbus_rtu_encode(bytes([unit, 3, 2 * regs]) + rng.randbytes(2 * regs))
        out += modbus_rtu_encode(bytes([unit, 6, 0, 1]) + rng.randbytes(2))
        out += modbus_rtu_encode(bytes([unit, 0x83, 2]))
    return bytes(out)


def unknown_functions(rng: random.Random, size: int) -> bytes:
    out = bytearray()
    while len(out) < size:
        out += modbus_rtu_encode(
            bytes([rng.randrange(1, 248), rng.choice([0x41, 0x64])]) + rng.randbytes(rng.randrange(0, 40))
        )
    return bytes(out)


def with_noise(rng: random.Random, frames: bytes, size: int) -> bytes:
    out = bytearray()
    step = 200
    for i in range(0, len(frames), step):
        out += frames[i : i + step] + rng.randbytes(rng.randrange(0, 30))
        if len(out) >= size:
            break
    return bytes(out)


def run(
    make: Callable[[], Any], data: bytes, chunk: int
) -> tuple[list[tuple[int, int, bool | None]], int, float]:
    decoder = make()
    t0 = time.perf_counter()
    events = []
    for i in range(0, len(data), chunk):
        events += decoder.feed(data[i : i + chunk])
    events += decoder.flush()
    elapsed = time.perf_counter() - t0
    return [(e.start, e.end, e.checksum_valid) for e in events], decoder.bytes_skipped, elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kib", type=int, default=256)
    ap.add_argument("--chunk", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    size = args.kib * 1024
    rng = random.Random(28)
    streams = {
        "noise": rng.randbytes(size),
        "traffic (fc 3/6/0x83)": traffic(rng, size),
        "unknown functions": unknown_functions(rng, size),
        "traffic + noise bursts": with_noise(
            rng, traffic(rng, size) + unknown_functions(rng, size // 4), size
        ),
    }
    old_cls = load_old()
    print(f"Modbus RTU framing, {args.kib} KiB per stream, {args.chunk}-byte feeds, best of {args.repeat}")
    print(f"{'stream':<24} {'frames':>7} {'skipped':>8} {'old µs/B':>9} {'new µs/B':>9} {'old/new':>8}")
    for name, data in streams.items():
        old_frames, old_skipped, _ = run(old_cls, data, args.chunk)
        new_frames, new_skipped, _ = run(ModbusRtuDecoder, data, args.chunk)
        same = old_frames == new_frames and old_skipped == new_skipped
        best_old = min(run(old_cls, data, args.chunk)[2] for _ in range(args.repeat))
        best_new = min(run(ModbusRtuDecoder, data, args.chunk)[2] for _ in range(args.repeat))
        per_old, per_new = best_old / len(data) * 1e6, best_new / len(data) * 1e6
        flag = "" if same else "  DIFFERENT FRAMES"
        print(
            f"{name:<24} {len(new_frames):>7} {new_skipped:>8} {per_old:>9.2f} {per_new:>9.2f}"
            f" {per_old / per_new:>7.1f}x{flag}"
        )


if __name__ == "__main__":
    main()
