"""RxRing: wrap-around, absolute offsets and exact loss accounting (checked against a plain model)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from serial_mcp.core.ring import MIN_CAPACITY, RxRing


def test_empty_ring_reads_nothing() -> None:
    ring = RxRing(MIN_CAPACITY)
    r = ring.read(0)
    assert (r.data, r.from_offset, r.bytes_lost, ring.start_offset, ring.end_offset) == (b"", 0, 0, 0, 0)


def test_wrap_keeps_newest_and_reports_loss() -> None:
    ring = RxRing(1024)
    stream = bytes(range(256)) * 10  # 2560 bytes
    for i in range(0, len(stream), 100):
        ring.append(stream[i : i + 100], float(i))
    assert ring.end_offset == 2560
    assert ring.start_offset == 2560 - 1024
    r = ring.read(0)
    assert r.bytes_lost == 2560 - 1024
    assert r.from_offset == 1536
    assert r.data == stream[1536:]
    assert ring.dropped_total == 1536


def test_chunk_larger_than_capacity() -> None:
    ring = RxRing(1024)
    ring.append(b"a" * 10, 1.0)
    big = bytes(i % 251 for i in range(5000))
    ring.append(big, 2.0)
    assert ring.read(ring.start_offset).data == big[-1024:]
    assert ring.read(0).bytes_lost == 5010 - 1024


def test_read_max_bytes_and_bounds() -> None:
    ring = RxRing(1024)
    ring.append(b"hello world", 1.0)
    r = ring.read(6, max_bytes=3)
    assert (r.data, r.next_offset) == (b"wor", 9)
    with pytest.raises(ValueError):
        ring.read(12)
    with pytest.raises(ValueError):
        RxRing(10)


def test_arrival_times_follow_chunks() -> None:
    ring = RxRing(1024)
    ring.append(b"abc", 1.0)
    ring.append(b"de", 2.0)
    assert ring.time_at(0) == 1.0 and ring.time_at(2) == 1.0
    assert ring.time_at(3) == 2.0 and ring.time_at(4) == 2.0
    assert ring.time_at(5) is None
    ring.append(b"x" * 1024, 3.0)  # everything older is evicted
    assert ring.time_at(4) is None
    assert ring.time_at(ring.start_offset) == 3.0


def test_find_across_wrap_point() -> None:
    ring = RxRing(1024)
    ring.append(b"." * 1020, 0.0)
    ring.append(b"NEEDLE", 1.0)  # straddles the physical end of the buffer
    assert ring.find(b"NEEDLE", 0) == 1020
    assert ring.read(1020).data == b"NEEDLE"


@settings(max_examples=200, deadline=None)
@given(
    capacity=st.integers(min_value=MIN_CAPACITY, max_value=3000),
    chunks=st.lists(st.binary(min_size=0, max_size=2500), max_size=30),
    probe=st.integers(min_value=0, max_value=40000),
)
@pytest.mark.slow
def test_ring_matches_model(capacity: int, chunks: list[bytes], probe: int) -> None:
    """Whatever is appended, a read at any offset returns model[offset:] minus exactly the evicted part."""
    ring = RxRing(capacity)
    model = bytearray()
    for i, c in enumerate(chunks):
        ring.append(c, float(i))
        model += c
    assert ring.end_offset == len(model)
    assert ring.start_offset == max(0, len(model) - capacity)
    offset = probe % (len(model) + 1)
    r = ring.read(offset)
    assert r.bytes_lost == max(0, ring.start_offset - offset)
    assert r.from_offset == max(offset, ring.start_offset)
    assert r.data == bytes(model[r.from_offset :])
    assert len(r.data) + r.bytes_lost == len(model) - offset
    assert ring.dropped_total == ring.start_offset
