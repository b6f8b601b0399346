"""Issue 24.2: detected events surfaced on every connection — result text and structured events, once per
caller; ``read(until=[...])``; get_status counters; the event log, captures and the view's timeline.

The device output is real (tests/data/crashes: esp-idf-monitor's ESP32-C3 panic test inputs).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from serial_mcp import Engine
from serial_mcp.api import EngineConnection
from serial_mcp.core.capture import parse_capture
from serial_mcp.errors import SerialMcpError
from serial_mcp.serial.fake import FakeDevice, FakeOpener
from serial_mcp.view.timeline import build_timeline

pytestmark = pytest.mark.anyio

DATA = Path(__file__).parent.parent / "data" / "crashes"
C3 = (DATA / "esp32c3-panics.txt").read_bytes()  # boot, abort(), reset, Guru Meditation, reset, ...
ABORT_AT = C3.index(b"abort() was called")
GURU_AT = C3.index(b"Guru Meditation Error")
SECOND_BOOT = C3.rindex(b"\n", 0, C3.index(b"ESP-ROM", 10)) + 1  # its line starts with reset noise


async def _opened(tmp_path: Path | None = None) -> tuple[Engine, EngineConnection, FakeDevice]:
    opener = FakeOpener()
    device = opener.add("/dev/fake0")
    engine = Engine(opener=opener, capture_dir=tmp_path)
    conn = await engine.open("/dev/fake0")
    return engine, conn, device


async def test_a_read_lists_the_events_of_its_bytes_once_with_a_line_each() -> None:
    engine, conn, device = await _opened()
    async with engine:
        device.feed(C3[: SECOND_BOOT + 200])  # the first boot, its abort() and the boot that is its reset
        head = await conn.read(timeout_ms=3000, match="Enter test name")
        assert (
            head.summary().splitlines()[0] == "↻ boot at offset 0: ESP-ROM:esp32c3-20200918 (RTC_SW_CPU_RST)"
        )
        assert [(e["kind"], e["offset"]) for e in head.events or []] == [("boot", 0)]
        rest = await conn.read(timeout_ms=3000, idle_ms=300)
        lines = rest.summary().splitlines()
        assert lines[0].startswith(f"⚠ crash at offset {ABORT_AT}: abort() was called at PC 0x42003863")
        assert lines[0].endswith("→ reset RTC_SW_CPU_RST")
        # printable text only (issue 38): the reset's glitch bytes before the banner are not its label
        assert lines[1] == f"↻ boot at offset {SECOND_BOOT}: ESP-ROM:esp32c3-20200918 (RTC_SW_CPU_RST)"
        assert [(e["kind"], e["offset"]) for e in rest.events or []] == [
            ("crash", ABORT_AT),
            ("boot", SECOND_BOOT),
        ]
        assert rest.events is not None and rest.events[0]["reset_reason"] == "RTC_SW_CPU_RST"
        again = await conn.read(timeout_ms=50)
        assert again.events is None and not again.summary().startswith(("⚠", "↻"))
        status = conn.status()
        assert status.events is not None
        assert (status.events["boots"], status.events["crashes"]) == (2, 1)
        assert status.events["last"]["offset"] == SECOND_BOOT
        assert f"events: 2 boot(s), 1 crash(es), last: boot at offset {SECOND_BOOT}: " in status.summary()


async def test_until_crash_ends_the_read_at_the_end_of_the_dump_and_the_next_read_goes_on() -> None:
    engine, conn, device = await _opened()
    async with engine:
        device.feed(C3)
        r = await conn.read(timeout_ms=10_000, until=["crash"])
        assert r.stop_reason == "event"
        assert r.next_offset == SECOND_BOOT  # the dump, its "Rebooting..." line and its line end
        assert r.data.rstrip().endswith("Rebooting...")
        assert [e["kind"] for e in r.events or []][:2] == ["boot", "crash"]
        r2 = await conn.read(timeout_ms=10_000, until=["crash"])
        assert r2.stop_reason == "event" and r2.from_offset == SECOND_BOOT
        crash = [e for e in r2.events or [] if e["kind"] == "crash"]
        assert [e["offset"] for e in crash] == [GURU_AT]
        assert crash[0]["text"].startswith("Guru Meditation Error: Core  0 panic'ed (Illegal instruction)")


@pytest.mark.slow  # over a second: the full suite runs it, the fast lane does not
async def test_until_waits_for_a_crash_that_comes_later_and_match_can_win_first() -> None:
    engine, conn, device = await _opened()
    async with engine:
        device.feed(C3[:ABORT_AT])  # boot, no crash yet
        r = await conn.read(timeout_ms=400, until=["crash"])
        assert r.stop_reason == "timeout"  # no idle stop with until: it waits for the event
        device.feed(C3[ABORT_AT : SECOND_BOOT + 100])
        r = await conn.read(timeout_ms=10_000, until=["crash"])
        assert r.stop_reason == "event" and r.next_offset == SECOND_BOOT
        device.feed(C3[SECOND_BOOT + 100 :])
        r = await conn.read(timeout_ms=10_000, until=["crash"], match="Enter test name")
        assert r.stop_reason == "match"


async def test_until_on_a_framed_read_keeps_the_lines_after_the_event_for_the_next_read() -> None:
    engine, conn, device = await _opened()
    async with engine:
        device.feed(C3)
        r = await conn.read(timeout_ms=10_000, until=["crash"], rx_framing={"type": "line"}, max_frames=1000)
        assert r.stop_reason == "event"
        assert r.frames and r.frames[-1].offset < SECOND_BOOT
        nxt = await conn.read(timeout_ms=1000, rx_framing={"type": "line"}, max_frames=1)
        assert nxt.frames and nxt.frames[0].offset == SECOND_BOOT


async def test_until_refuses_an_unknown_kind() -> None:
    engine, conn, _ = await _opened()
    async with engine:
        with pytest.raises(SerialMcpError) as refused:
            await conn.read(until=["crsh"])  # type: ignore[list-item]  # mypy refuses it too
        assert refused.value.code == "invalid_argument" and "'crash'" in refused.value.message


async def test_events_go_into_the_log_the_recording_and_the_timeline(tmp_path: Path) -> None:
    engine, conn, device = await _opened(tmp_path)
    async with engine:
        await conn.record("start", path="boot.jsonl")
        device.feed(C3)
        await conn.read(timeout_ms=10_000, until=["crash"])
        log = await conn.get_log(limit=1000, payloads=False)
        logged = [e for e in log.events if e["type"] == "event"]
        assert [e["event"]["kind"] for e in logged][:3] == ["boot", "crash", "boot"]
        assert logged[1]["event"]["offset"] == ABORT_AT and logged[1]["label"].startswith("⚠ crash")
        assert conn.events()[1]["pc"] == "0x42003863"
        await conn.record("stop")
    capture = parse_capture((tmp_path / "boot.jsonl").read_text().splitlines())
    markers = [e for e in capture.events if e.type == "marker" and isinstance(e.fields.get("event"), dict)]
    assert markers and markers[0].fields["event"]["kind"] == "boot"
    timeline = build_timeline(capture.events, gap_s=10)
    kinds = [m[1] for m in timeline.markers]
    assert "crash" in kinds and "boot" in kinds
    assert json.dumps(timeline.as_json())  # the page gets plain JSON


def test_the_view_marks_the_crashes_of_a_capture_recorded_without_them() -> None:
    from serial_mcp.core.capture import CaptureEvent

    chunks = [C3[i : i + 700] for i in range(0, len(C3), 700)]
    events, offset = [], 0
    for i, chunk in enumerate(chunks):
        events.append(CaptureEvent(0.1 * i, "rx", chunk, offset))
        offset += len(chunk)
    markers = build_timeline(events, gap_s=10).markers
    crashes = [m for m in markers if m[1] == "crash"]
    assert [m[2].split(":")[0] for m in crashes] == [
        f"crash at offset {ABORT_AT}",
        f"crash at offset {GURU_AT}",
    ]
    assert [m[1] for m in markers].count("boot") == 3


async def test_until_reset_ends_on_an_unannounced_watchdog_reset_too() -> None:
    data = (DATA.parent / "bootlogs" / "esp32" / "esp32-mdf-boot.txt").read_bytes()  # a real watchdog reset
    engine, conn, device = await _opened()
    async with engine:
        device.feed(data)
        first = await conn.read(until=["reset"], timeout_ms=5000)  # the first boot is a boot too
        assert first.stop_reason == "event"
        second = await conn.read(until=["reset"], timeout_ms=5000)
        assert second.stop_reason == "event"
        boots = [e for e in second.events or [] if e["kind"] == "boot"]
        assert [e["reason"] for e in boots] == ["RTCWDT_RTC_RESET"]


@pytest.mark.parametrize("seed", range(4))
async def test_a_real_kernel_panic_is_one_crash_at_its_line_however_the_bytes_arrive(seed: int) -> None:
    """The QEMU sysrq panic (tests/data/crashes), fed in random pieces, some after a pause (so the pump,
    the ring's chunk times and the watch's pieces all split it differently): one crash, at its line."""
    import random

    import anyio

    data = (DATA / "linux-sysrq-panic.txt").read_bytes()
    line = data.rindex(b"\n", 0, data.index(b"Kernel panic - not syncing")) + 1
    rng = random.Random(seed)
    engine, conn, device = await _opened()
    async with engine:
        at = 0
        while at < len(data):
            n = rng.choice((1, 7, 64, 700, 4096, 20000))
            device.feed(data[at : at + n])
            at += n
            if rng.random() < 0.05:
                await anyio.sleep(
                    0.03
                )  # a pause: the watch's batch ends here, the next chunk gets a new time
        r = await conn.read(until=["crash"], timeout_ms=10_000, max_bytes=len(data))
        assert r.stop_reason == "event"
        crashes = [e for e in conn.events() if e["kind"] == "crash"]
        assert [(e["offset"], e["reason"]) for e in crashes] == [(line, "sysrq triggered crash")]
        assert conn.status().events["crashes"] == 1  # type: ignore[index]
