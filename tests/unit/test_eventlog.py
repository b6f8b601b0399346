"""EventLog: bounded by events and bytes, evictions counted, and cheap per rx chunk."""

from __future__ import annotations

import pytest

from serial_mcp.core.eventlog import NO_FIELDS, EventLog


def test_bounded_by_event_count_and_evictions_are_counted() -> None:
    log = EventLog(budget_bytes=1 << 30, max_events=3)
    for i in range(5):
        log.append_rx(i * 10, 10, float(i))
    assert len(log) == 3 and log.evicted_events == 2 and log.first_seq() == 3
    assert [e.offset for e in log.since(0)] == [20, 30, 40]


def test_bounded_by_bytes_with_tx_payloads_counted() -> None:
    log = EventLog(budget_bytes=1000, max_events=100)
    for i in range(4):
        log.append("tx", float(i), data=b"x" * 400)
    assert len(log) < 4 and log.evicted_bytes == 400 * log.evicted_events > 0


def test_since_tail_and_clear() -> None:
    log = EventLog()
    for i in range(5):
        log.append("line", float(i), text=f"l{i}")
    assert [e.seq for e in log.since(2, limit=2)] == [3, 4]
    assert [e.fields["text"] for e in log.tail(2)] == ["l3", "l4"]
    assert log.clear() == 5 and len(log) == 0 and log.next_seq == 6  # sequence numbers go on


def test_rx_events_share_one_read_only_mapping() -> None:
    # a dict per rx event was a quarter of its memory, on ~16 000 events per busy port
    log = EventLog()
    first, second = log.append_rx(0, 10, 1.0), log.append_rx(10, 5, 1.1)
    assert first.fields is second.fields is NO_FIELDS and dict(first.fields) == {}
    with pytest.raises(TypeError):
        first.fields["x"] = 1  # type: ignore[index]
    other = log.append("config", 1.2, baud_rate=9600)
    assert other.fields == {"baud_rate": 9600} and first.fields == {}
