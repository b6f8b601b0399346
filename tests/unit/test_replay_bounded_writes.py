"""A replay keeps a bounded tail of what the host wrote, and counts all of it (issue 28.16, for
``replay://``): weeks of writes to a replayed device must not grow the server's memory."""

from __future__ import annotations

from typing import Any

from serial_mcp.core.capture import Capture, CaptureEvent, CaptureHeader
from serial_mcp.core.settings import SerialSettings
from serial_mcp.serial.replay import ReplayPortHandle, ReplaySpec
from serial_mcp.serial.write_tail import KEEP_BYTES, KEEP_WRITES


def _handle(mode: str) -> ReplayPortHandle:
    events = [CaptureEvent(0, "open"), CaptureEvent(0.5, "tx", b"AT\r"), CaptureEvent(1.0, "rx", b"OK\r\n")]
    capture = Capture(CaptureHeader(created="2026-11-30T10:00:00.000000Z"), events)
    return ReplayPortHandle("replay://test", capture, ReplaySpec("test", mode=mode))  # type: ignore[arg-type]


def _held(handle: ReplayPortHandle) -> int:
    return len(handle.written) + sum(len(w) for w in handle.writes)


def test_eight_mib_of_small_writes_keep_a_bounded_tail_and_exact_counts() -> None:
    handle = _handle("instant")
    chunk = bytes(range(256)) * 4  # 1 KiB
    for i in range(8192):  # 8 MiB in 8192 writes
        handle.write(chunk[i % 256 :] + chunk[: i % 256])
    assert _held(handle) <= 4 * KEEP_BYTES, f"kept {_held(handle)} bytes of 8 MiB written"
    assert len(handle.writes) <= 2 * KEEP_WRITES
    assert handle.write_tail.bytes_written == 8 << 20 and handle.write_tail.write_count == 8192
    last = chunk[8191 % 256 :] + chunk[: 8191 % 256]
    assert handle.writes[-1] == last and bytes(handle.written).endswith(last)  # the newest are kept
    handle.close()


def test_one_huge_write_keeps_its_tail_only() -> None:
    handle = _handle("respond")
    big = b"x" * (4 << 20) + b"END"
    handle.write(big)
    assert _held(handle) <= 2 * KEEP_BYTES
    assert bytes(handle.written).endswith(b"END") and handle.write_tail.bytes_written == len(big)
    handle.close()


def test_calls_are_bounded_too() -> None:
    handle = _handle("instant")
    for _ in range(100_000):
        handle.reset_input()
        handle.set_dtr(True)
    assert len(handle.calls) <= 2 * 1024
    assert handle.calls[-1] == ("dtr", True)
    handle.apply_settings(SerialSettings(baud_rate=9600))
    calls: list[Any] = list(handle.calls)  # mypy would keep the ("dtr", True) it just saw
    assert calls[-1] == ("settings", SerialSettings(baud_rate=9600))
    handle.close()
