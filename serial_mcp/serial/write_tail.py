"""What a long-lived simulated or replayed port keeps of the host's writes: a bounded tail, and counts.

A replay (``replay://``) may serve for weeks; keeping every byte the host wrote would grow without
end. ``WriteTail`` keeps the last ``keep_bytes`` written (``written``) and the tails of the last
``keep_writes`` writes (``writes``, ``keep_bytes`` in all), each trimmed when it reaches twice its
bound (so a write costs O(its length) on average); ``bytes_written`` and ``write_count`` count
everything.
"""

from __future__ import annotations

from typing import Final

KEEP_BYTES: Final = 64 * 1024
KEEP_WRITES: Final = 1024


class WriteTail:
    """The bounded record of a port's writes (not thread-safe: the port's lock guards it)."""

    def __init__(self, keep_bytes: int = KEEP_BYTES, keep_writes: int = KEEP_WRITES) -> None:
        self.keep_bytes, self.keep_writes = keep_bytes, keep_writes
        self.written = bytearray()  # the tail of everything written (mutated in place)
        self.writes: list[bytes] = []  # the tails of the last writes (mutated in place)
        self.bytes_written = 0
        self.write_count = 0
        self._held = 0  # bytes in ``writes``

    def keep(self, data: bytes) -> None:
        keep = self.keep_bytes
        self.bytes_written += len(data)
        self.write_count += 1
        tail = data[-keep:] if keep else b""
        self.written += tail
        if len(self.written) > 2 * keep:
            del self.written[: len(self.written) - keep]
        self.writes.append(tail)
        self._held += len(tail)
        if self._held > 2 * keep or len(self.writes) > 2 * self.keep_writes:
            self._trim_writes()

    def _trim_writes(self) -> None:
        """The newest writes that fit both bounds stay."""
        first, held = len(self.writes), 0
        while first and len(self.writes) - first < self.keep_writes:
            size = len(self.writes[first - 1])
            if held + size > self.keep_bytes:
                break
            first -= 1
            held += size
        del self.writes[:first]
        self._held = held
