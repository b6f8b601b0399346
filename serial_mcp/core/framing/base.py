"""Events and protocols shared by every framing codec (sans-IO: bytes in, events out).

Offsets are absolute stream offsets, the same numbers the RX ring uses, so a frame can be
traced back to the exact bytes it came from after any amount of chunking.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

#: Longest frame a separator-based decoder buffers before it reports an error and resyncs,
#: so a device that never sends a terminator cannot grow memory without bound.
DEFAULT_MAX_LENGTH = 1 << 20


@dataclass(slots=True, unsafe_hash=True)
class Frame:
    """One decoded frame and the raw stream span ``[start, end)`` it was cut from.

    Treat it as immutable (it is hashable by value). It is not ``frozen``: a frozen
    dataclass costs three times as much to build, and decoders build one per frame.
    """

    data: bytes
    start: int
    end: int
    checksum_valid: bool | None = None
    #: A bad frame whose checksum the framing split off: ``computed XXXX, received YYYY``.
    detail: str | None = field(default=None, compare=False)


def crc_text(computed: int, received: int, width: int) -> str:
    """``computed 9B39, received 9A38``: a failed check's two values, ``width`` bytes each."""
    return f"computed {computed:0{2 * width}X}, received {received:0{2 * width}X}"


@dataclass(frozen=True, slots=True)
class FramingError:
    """A decode error in the stream; the decoder has already resynchronised past it."""

    message: str
    offset: int


FrameEvent = Frame | FramingError


class FrameDecodeError(ValueError):
    """A single packet handed to a one-shot ``decode()`` function is malformed."""


class FrameDecoder(Protocol):
    """Incremental decoder: any chunking of the same bytes yields the same events."""

    def feed(self, data: bytes) -> list[FrameEvent]:
        """Consume ``data`` and return the frames and errors it completes."""
        ...

    def reset(self, offset: int) -> None:
        """Drop partial state; the next byte fed is at absolute ``offset`` (after a gap)."""
        ...

    @property
    def pending_start(self) -> int:
        """Absolute offset of the first byte not yet emitted as (or skipped past) a frame."""
        ...

    def flush(self) -> list[FrameEvent]:
        """End of stream: emit a trailing unterminated frame where that is meaningful."""
        ...


class FrameEncoder(Protocol):
    """Turns one payload into the bytes to put on the wire."""

    def encode(self, payload: bytes) -> bytes:
        """The framed wire bytes for ``payload``."""
        ...
