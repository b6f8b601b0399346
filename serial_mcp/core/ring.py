"""RxRing: a fixed-capacity byte ring addressed by absolute stream offsets.

Every byte a port ever delivered has an absolute offset (0 = first byte after open).
The ring keeps the newest ``capacity`` bytes; older ones are dropped and a read that asks
for them is told exactly how many it lost. Not thread-safe on its own: the connection
holds one short lock around every call.
"""

from __future__ import annotations

import mmap
from bisect import bisect_left
from typing import NamedTuple

MIN_CAPACITY = 1024
MAX_CAPACITY = 256 * 1024 * 1024
DEFAULT_CAPACITY = 256 * 1024


class RingRead(NamedTuple):
    """The answer to a ring read: the bytes from ``from_offset`` and how many were lost before them."""

    data: bytes
    from_offset: int
    bytes_lost: int

    @property
    def next_offset(self) -> int:
        return self.from_offset + len(self.data)


class RxRing:
    """Drop-oldest byte ring with absolute offsets, exact loss accounting and per-chunk arrival times."""

    __slots__ = (
        "__weakref__",
        "_buf",
        "_cap",
        "_end",
        "_stamp_ends",
        "_stamp_head",
        "_stamp_times",
        "dropped_total",
    )

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if not MIN_CAPACITY <= capacity <= MAX_CAPACITY:
            raise ValueError(f"capacity must be within {MIN_CAPACITY}..{MAX_CAPACITY}, got {capacity}")
        self._cap = capacity
        # Anonymous memory the kernel maps in as bytes first land there: a quiet port's ring costs
        # no resident memory (a bytearray is zero-filled, so all of it at once: 260 KiB a port).
        self._buf = mmap.mmap(-1, capacity)
        self._end = 0
        # Chunk arrival times: _stamp_ends[i] is the end offset of a chunk that arrived at _stamp_times[i].
        # Lists with a moving head (compacted now and then) keep bisect O(log n).
        self._stamp_ends: list[int] = []
        self._stamp_times: list[float] = []
        self._stamp_head = 0
        self.dropped_total = 0

    @property
    def capacity(self) -> int:
        return self._cap

    @property
    def end_offset(self) -> int:
        """Offset one past the newest byte (= total bytes ever appended)."""
        return self._end

    @property
    def start_offset(self) -> int:
        """Offset of the oldest byte still retained."""
        return max(0, self._end - self._cap)

    def __len__(self) -> int:
        return self._end - self.start_offset

    def append(self, data: bytes, t: float) -> None:
        """Store a chunk that arrived at time ``t``; the oldest bytes make room if needed."""
        n = len(data)
        if not n:
            return
        before = self.start_offset
        cap = self._cap
        if n >= cap:
            # Only the last `cap` bytes survive; lay them out so that buffer index == offset % cap.
            tail = memoryview(data)[n - cap :]
            p = (self._end + n) % cap
            self._buf[p:] = tail[: cap - p]
            self._buf[:p] = tail[cap - p :]
        else:
            pos = self._end % cap
            first = min(n, cap - pos)
            self._buf[pos : pos + first] = data[:first]
            if first < n:
                self._buf[: n - first] = data[first:]
        self._end += n
        self._stamp_ends.append(self._end)
        self._stamp_times.append(t)
        start = self.start_offset
        self.dropped_total += start - before
        ends = self._stamp_ends
        head = self._stamp_head
        if ends[head] <= start:
            head = bisect_left(ends, start + 1, head)
            if head > 4096 and head * 2 > len(ends):
                del ends[:head]
                del self._stamp_times[:head]
                head = 0
            self._stamp_head = head

    def read(self, offset: int, max_bytes: int | None = None) -> RingRead:
        """Bytes from ``offset`` on (at most ``max_bytes``); below the start: what is left + the gap."""
        if offset < 0 or offset > self._end:
            raise ValueError(f"offset {offset} outside 0..{self._end}")
        start = self.start_offset
        lost = 0
        if offset < start:
            lost = start - offset
            offset = start
        stop = self._end if max_bytes is None else min(self._end, offset + max_bytes)
        return RingRead(self._slice(offset, stop), offset, lost)

    def _slice(self, begin: int, stop: int) -> bytes:
        n = stop - begin
        if n <= 0:
            return b""
        cap = self._cap
        pos = begin % cap
        view = memoryview(self._buf)  # one copy out (a slice is a copy, and bytes() another)
        if pos + n <= cap:
            return view[pos : pos + n].tobytes()
        return b"".join((view[pos:], view[: n - (cap - pos)]))

    def find(self, needle: bytes, begin: int, stop: int | None = None) -> int:
        """Absolute offset of the first ``needle`` in [begin, stop), or -1; ``begin`` is clamped."""
        begin = max(begin, self.start_offset)
        stop = self._end if stop is None else min(stop, self._end)
        if stop - begin < len(needle):
            return -1
        idx = self._slice(begin, stop).find(needle)
        return -1 if idx < 0 else begin + idx

    def stamps(self, begin: int, stop: int) -> list[tuple[int, float]]:
        """(end offset, arrival time) of each retained chunk holding a byte of ``[begin, stop)``, in order."""
        ends, times = self._stamp_ends, self._stamp_times
        i = bisect_left(ends, max(begin, self.start_offset) + 1, self._stamp_head)
        j = min(bisect_left(ends, stop, i) + 1, len(ends))  # through the chunk holding stop - 1
        return list(zip(ends[i:j], times[i:j], strict=True))

    def time_at(self, offset: int) -> float | None:
        """Arrival time of the chunk holding the byte at ``offset`` (None if no longer known)."""
        if offset < self.start_offset:
            return None
        i = bisect_left(self._stamp_ends, offset + 1, self._stamp_head)
        if i >= len(self._stamp_ends):
            return None
        return self._stamp_times[i]
