"""Issue 38.3-4: the whole story in the text, most important first. A result's event lines are ordered by
severity (a boot loop, then crashes, before boots), a boot loop is always shown, a long list keeps the
important events; ``get_log``'s text names each detected event with its label and can be filtered by kind;
and when the watch sheds a flood, the result says which offsets were not scanned."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from serial_mcp import Engine
from serial_mcp.core.events import EventDetector
from serial_mcp.core.ring import RxRing
from serial_mcp.errors import InvalidArgument
from serial_mcp.serial import event_watch
from serial_mcp.serial.event_text import MAX_TEXT_LINES, text_lines
from serial_mcp.serial.event_watch import MAX_LAG, MAX_SHOWN, EventWatch
from serial_mcp.serial.fake import FakeOpener

pytestmark = pytest.mark.anyio

DATA = Path(__file__).parent.parent / "data" / "crashes"


def _item(kind: str, severity: str, n: int) -> dict[str, Any]:
    return {"seq": n, "kind": kind, "severity": severity, "offset": n * 100, "line": f"{kind} #{n}"}


def test_the_text_lists_a_boot_loop_and_crashes_before_boots_and_counts_the_rest() -> None:
    # a crash loop as it arrives: boot, crash, boot, crash, ..., then the boot loop last
    items = []
    for n in range(6):
        items += [_item("boot", "info", 2 * n), _item("crash", "critical", 2 * n + 1)]
    items.append(_item("boot_loop", "critical", 99))
    lines = text_lines(items).splitlines()
    assert lines[0] == "boot_loop #99"
    assert lines[1:MAX_TEXT_LINES] == [f"crash #{2 * n + 1}" for n in range(MAX_TEXT_LINES - 1)]
    assert lines[-1].startswith(f"… and {len(items) - MAX_TEXT_LINES} more")


def test_every_boot_loop_is_shown_however_many_crashes_came() -> None:
    items = [_item("crash", "critical", n) for n in range(8)] + [
        _item("boot_loop", "critical", 50),
        _item("boot_loop", "critical", 60),
    ]
    lines = text_lines(items).splitlines()
    assert lines[:2] == ["boot_loop #50", "boot_loop #60"]
    assert lines[-1].startswith(f"… and {len(items) - MAX_TEXT_LINES} more")


def test_events_left_out_of_a_result_are_counted_in_its_text() -> None:
    items = [_item("crash", "critical", 1)]
    items[0]["earlier"] = 7
    assert text_lines(items).splitlines()[-1].startswith("… and 7 more")


class _Conn:
    """What the watch reads of a connection: its ring under a lock, and where found events go."""

    def add_listener(self, listener: object) -> None:  # the watch follows the log for writes and resets
        pass

    def __init__(self, ring: RxRing) -> None:
        self.ring = ring
        self.thread_lock = threading.Lock()
        self.recorded: list[Any] = []
        self.id = "c1"

    def record_event(self, item: Any) -> None:
        self.recorded.append(item)

    def wake_waiters(self) -> None:
        pass


def _watch_over(data: bytes) -> tuple[EventWatch, _Conn]:
    ring = RxRing(max(1024, len(data) + 1))
    conn = _Conn(ring)
    ring.append(data, 1.0)
    return EventWatch(conn, EventDetector()), conn  # type: ignore[arg-type]


def test_a_long_list_keeps_the_boot_loop_and_the_crashes() -> None:
    log = (DATA / "esp32c3-panics.txt").read_bytes()
    boot = log[: log.index(b"\n", log.index(b"ESP-ROM")) + 1]  # a boot banner line on its own
    crash = b"Guru Meditation Error: Core  0 panic'ed (LoadProhibited). Exception was unhandled.\r\n"
    quiet = b"\r\n" * 4
    stream = (boot + quiet) * (MAX_SHOWN + 5) + crash + quiet + boot
    watch, conn = _watch_over(stream)
    watch._scan(conn, None)  # type: ignore[arg-type]
    watch._publish(conn, watch.detector.flush())  # type: ignore[arg-type]
    kinds = [e.event.kind for e in watch.events()]
    assert kinds.count("boot") > MAX_SHOWN and "crash" in kinds
    listed = watch.take_unseen("k", len(stream) + 1) or []
    assert len(listed) == MAX_SHOWN
    assert {e["kind"] for e in listed} >= {"crash", "boot_loop"}
    assert listed[0]["earlier"] == len(kinds) - MAX_SHOWN
    assert [e["seq"] for e in listed] == sorted(e["seq"] for e in listed)  # still in arrival order
    text = text_lines(listed).splitlines()
    assert text[0].startswith("⚠ boot loop") and text[1].startswith("⚠ crash")


def test_a_range_the_watch_skipped_is_named_once_to_each_caller() -> None:
    noise = b"$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47\r\n"
    stream = noise * ((MAX_LAG + (1 << 20)) // len(noise))
    watch, conn = _watch_over(stream)
    watch._scan(conn, None)  # type: ignore[arg-type]  # more than MAX_LAG waits: it skips ahead
    assert watch.bytes_not_scanned > 0
    listed = watch.take_unseen("k", len(stream)) or []
    assert [(e["kind"], e["offset"], e["end"]) for e in listed] == [
        ("not_scanned", 0, watch.bytes_not_scanned)
    ]
    line = text_lines(listed).splitlines()[0]
    assert f"offsets 0-{watch.bytes_not_scanned}" in line and "not scanned" in line
    assert watch.take_unseen("k", len(stream)) is None  # told once
    assert watch.take_unseen("other", len(stream)) == listed  # each caller is told
    assert watch.status()["last_not_scanned"] == [0, watch.bytes_not_scanned]


async def test_get_log_names_each_detected_event_and_filters_by_kind() -> None:
    log = (DATA / "esp32c3-panics.txt").read_bytes()
    opener = FakeOpener()
    device = opener.add("/dev/fake0")
    async with Engine(opener=opener) as engine:
        conn = await engine.open("/dev/fake0")
        device.feed(log)
        await conn.read(timeout_ms=3000, until=["crash"])
        await conn.read(timeout_ms=1000, idle_ms=300)
        result = await conn.get_log(limit=1000, payloads=False)
        text = result.summary()
        detected = [e for e in result.events if e["type"] == "event"]
        assert detected, text
        crash = next(e for e in detected if e["event"]["kind"] == "crash")
        assert f"#{crash['seq']} {crash['label']}" in text.splitlines()
        assert text.index("⚠ crash") < text.index("↻ boot")  # most important first
        only = await conn.get_log(limit=1000, kinds=["crash"])
        assert only.events and {e["event"]["kind"] for e in only.events} == {"crash"}
        assert len(only.events) == sum(1 for e in detected if e["event"]["kind"] == "crash")
        both = await conn.get_log(limit=1000, kinds=["tx", "boot"], payloads=False)
        assert {e["type"] for e in both.events} == {"event"}  # nothing was sent
        with pytest.raises(InvalidArgument, match="Did you mean 'crash'"):
            await conn.get_log(kinds=["crsh"])


def test_the_watch_module_keeps_its_limits() -> None:
    assert MAX_TEXT_LINES < MAX_SHOWN <= event_watch.MAX_KEPT
