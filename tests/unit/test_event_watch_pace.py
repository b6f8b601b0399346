"""Issue 24, cost: the event watch keeps pace with a fast stream and a read loop does not rescan.

* The pump's ``wake(end)`` asks for a scan at once when ``BATCH_BYTES`` wait to be scanned: at 100 MB/s the
  ``BATCH_S`` pause would let ``MAX_LAG`` bytes pile up, and the watch would skip them unscanned.
* A read loop asks "could the bytes the watch has not scanned yet make an event?" once per result. The
  answer "no" is remembered while the watch has not moved, so the next question only searches the bytes
  that came since (plus a trigger's length before them): the bytes searched grow with the stream, not with
  the stream times the number of reads. A trigger split across two questions is still found.
"""

from __future__ import annotations

from typing import Any

from serial_mcp.core.events import EventDetector
from serial_mcp.core.ring import RxRing
from serial_mcp.serial.event_watch import BATCH_BYTES, EventWatch

NOISE = b"$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47\r\n"


class _Conn:
    """What the watch asks of a connection here: its ring by offset (the thread is never started)."""

    def add_listener(self, listener: object) -> None:  # the watch follows the log for writes and resets
        pass

    def __init__(self) -> None:
        self.id = "c1"
        self.ring = RxRing(8 << 20)

    def read_ring(self, offset: int, max_bytes: int | None) -> Any:
        return self.ring.read(offset, max_bytes)


class _CountingSearch:
    """The detector's prefilter, counting the bytes it is asked to search."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.searched = 0

    def search(self, data: bytes, *args: int) -> Any:
        self.searched += len(data)
        return self.inner.search(data, *args)

    def found(self, data: bytes) -> bool:
        self.searched += len(data)
        return bool(self.inner.found(data))


def _watch() -> tuple[EventWatch, _Conn, _CountingSearch]:
    conn = _Conn()
    watch = EventWatch(conn, EventDetector())  # type: ignore[arg-type]
    counting = _CountingSearch(watch.detector._trigger)
    watch.detector._trigger = counting  # type: ignore[assignment]
    return watch, conn, counting


def test_wake_asks_for_a_scan_at_once_when_a_batch_of_bytes_waits() -> None:
    watch, conn, _ = _watch()  # conn kept: a dropped connection asks its watch to end
    watch.wake(4096)
    assert watch._wake.is_set()
    assert not watch._now.is_set()  # a trickle waits BATCH_S: one scan for many chunks
    watch.wake(BATCH_BYTES)
    assert watch._now.is_set()  # a flood is scanned as it comes, not left to pile up past MAX_LAG
    del conn


def test_a_read_loop_searches_each_unscanned_byte_about_once() -> None:
    watch, conn, counting = _watch()
    block = NOISE * 60  # ~4 KiB, no trigger
    asks = 256
    for _ in range(asks):
        conn.ring.append(block, 0.0)
        assert not watch._may_emit(conn, conn.ring.end_offset)  # type: ignore[arg-type]
    total = conn.ring.end_offset
    span = watch.detector.trigger_span
    assert span is not None
    # each question repeats at most a trigger's length of what the one before it searched
    assert counting.searched <= total + asks * span
    assert counting.searched < 2 * total  # without the memo: total * asks / 2


def test_a_trigger_split_between_two_questions_is_found() -> None:
    watch, conn, _ = _watch()
    conn.ring.append(NOISE * 10 + b"Guru Medi", 0.0)
    assert not watch._may_emit(conn, conn.ring.end_offset)  # type: ignore[arg-type]
    conn.ring.append(b"tation Error: Core  0 panic'ed (LoadProhibited).\r\n", 0.0)
    assert watch._may_emit(conn, conn.ring.end_offset)  # type: ignore[arg-type]


def test_the_memo_is_dropped_when_the_watch_moves_and_with_user_boot_patterns() -> None:
    watch, conn, counting = _watch()
    conn.ring.append(NOISE * 10, 0.0)
    assert not watch._may_emit(conn, conn.ring.end_offset)  # type: ignore[arg-type]
    watch._pos = len(NOISE) * 5  # the watch scanned half of it meanwhile
    conn.ring.append(NOISE, 0.0)
    before = counting.searched
    assert not watch._may_emit(conn, conn.ring.end_offset)  # type: ignore[arg-type]
    assert counting.searched - before == conn.ring.end_offset - watch._pos  # asked again from where it is

    user = EventWatch(conn, EventDetector(boot_patterns=[rb"my board v\d+ up"]))  # type: ignore[arg-type]
    assert user.detector.trigger_span is None  # a regex has no length: every question searches it all
    conn.ring.append(b"my board v1", 0.0)
    assert not user._may_emit(conn, conn.ring.end_offset)  # type: ignore[arg-type]
    conn.ring.append(b"2 up\r\n", 0.0)
    assert user._may_emit(conn, conn.ring.end_offset)  # type: ignore[arg-type]

