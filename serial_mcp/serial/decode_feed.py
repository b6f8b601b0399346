"""Feed a framed read's decoder without holding the event loop, and weigh what it decoded.

Decoding is ordinary Python (pyubx2, the scanning framings, the parsers) and costs what the bytes
make it cost: up to tens of microseconds a byte for dense UBX, Modbus RTU noise or a crafted binary
stream. A small chunk (the usual reply) is decoded on the loop at once; a larger one runs in a
worker thread in pieces of :data:`FEED_PIECE` bytes, so the loop's other work (pings, other
sessions and ports) goes on, and stops between pieces once the read has frames enough or its
deadline has passed, returning how many bytes it consumed. A summary read (issue 26) gives the
Feeder a :class:`~serial_mcp.core.summary.StreamSummary`: each piece's frames are folded into it
where they were decoded (in the worker for a large chunk) and none is returned. Only the reading
coroutine uses the decoder (a cursor's decoder is held with the cursor), and a cancelled read waits
for the piece under way, so the decoder is never used by two threads at once.
"""

from __future__ import annotations

import time
from typing import Final

import anyio.to_thread

from serial_mcp.core.decode import DecodedEvent, DecodedFrame, StreamDecoder
from serial_mcp.core.summary import StreamSummary

__all__ = ["CHECKPOINT_S", "FEED_PIECE", "FIELD_BYTES", "FREE_FIELDS", "INLINE_FEED", "Feeder", "frame_size"]

#: Bytes decoded on the event loop at once (about 20 ms at the densest known cost per byte).
INLINE_FEED: Final = 512
#: Bytes decoded per piece in the worker thread.
FEED_PIECE: Final = 4096
#: Longest the loop goes on decoding small chunks one after another before it gives way.
CHECKPOINT_S: Final = 0.01
#: A frame's parsed fields past this many count FIELD_BYTES each against the read's max_bytes.
FREE_FIELDS: Final = 64
FIELD_BYTES: Final = 20


def fold(decoder: StreamDecoder, events: list[DecodedEvent], summary: StreamSummary) -> None:
    """Count ``events`` (and the frames ``validate`` dropped meanwhile) into ``summary``."""
    summary.add_events(events)
    rejected = decoder.rejected
    if rejected:
        summary.add_rejected(rejected)
        rejected.clear()


def _feed_pieces(
    decoder: StreamDecoder, data: bytes, deadline: float, enough: int, summary: StreamSummary | None = None
) -> tuple[list[DecodedEvent], int]:
    events: list[DecodedEvent] = []
    done = 0
    while done < len(data):
        piece = data[done : done + FEED_PIECE]
        if summary is not None:
            fold(decoder, decoder.feed(piece), summary)
        else:
            events += decoder.feed(piece)
        done += len(piece)
        if len(events) >= enough or time.monotonic() >= deadline:
            break
    return events, done


class Feeder:
    """The decoder of one framed read, fed through :meth:`feed`."""

    __slots__ = ("_since", "decoder", "summary")

    def __init__(self, decoder: StreamDecoder, summary: StreamSummary | None = None) -> None:
        self.decoder = decoder
        self.summary = summary
        self._since = time.monotonic()  # when the read last let the loop run (as far as we know)

    def rested(self) -> None:
        """The read has just waited (the loop ran meanwhile)."""
        self._since = time.monotonic()

    async def feed(self, data: bytes, deadline: float, enough: int) -> tuple[list[DecodedEvent], int]:
        """Decode ``data`` (or a prefix of it): the events and how many bytes were consumed.

        At least one piece is always decoded; past that, decoding stops once ``enough`` events
        are out or ``deadline`` (``time.monotonic()``) has passed. Small chunks decoded on the
        loop one after another give way (a checkpoint) every CHECKPOINT_S."""
        if len(data) <= INLINE_FEED:
            events = self.decoder.feed(data)
            if self.summary is not None:
                fold(self.decoder, events, self.summary)
                events = []
            if time.monotonic() - self._since >= CHECKPOINT_S:
                await anyio.sleep(0)
                self._since = time.monotonic()
            return events, len(data)
        done = await anyio.to_thread.run_sync(
            _feed_pieces, self.decoder, data, deadline, enough, self.summary
        )
        self._since = time.monotonic()
        return done


def frame_size(frame: DecodedFrame) -> int:
    """What a frame counts against a read's ``max_bytes``: its bytes, and for a frame decoded into
    many fields (a UBX NAV-SAT has thousands) FIELD_BYTES for each field past FREE_FIELDS, so a
    read of such frames ends near max_bytes of result rather than max_bytes of input."""
    size = len(frame.data)
    parsed = frame.parsed
    if parsed is not None:
        fields = parsed.get("fields")
        if isinstance(fields, dict) and len(fields) > FREE_FIELDS:
            size += FIELD_BYTES * (len(fields) - FREE_FIELDS)
    return size
