"""Frozen copy (bench only) of serial_mcp/core/decode.py before the throughput work.

The RX decode pipeline: framing decoder + optional parser + checksum validation (sans-IO).

Kept per cursor by the RX engine, so a frame torn across two reads is decoded whole.
With the parser's ``validate`` true, a frame whose checksum (framing-level or parser-level)
is bad is dropped and counted in ``frames_dropped``; otherwise it is emitted with
``checksum_valid`` False. Bytes the framing skipped as belonging to no frame (binary, gnss,
modbus_rtu, nmea framings) are counted in ``bytes_skipped``. FramingErrors pass through and
decoding continues after them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from serial_mcp.core.framing.base import Frame, FrameEvent, FramingError
from serial_mcp.core.parsers.base import Parser

__all__ = ["DecodedEvent", "DecodedFrame", "StreamDecoder", "combine_validity"]


@dataclass(slots=True)
class DecodedFrame:
    """A frame with its parsed interpretation; ``parsed`` is None without a parser.

    Treat it as immutable; not ``frozen`` because a frozen dataclass costs three times as
    much to build and the pipeline builds one per frame.
    """

    data: bytes
    start: int
    end: int
    checksum_valid: bool | None = None
    parsed: dict[str, Any] | None = None
    final: bool = False


DecodedEvent = DecodedFrame | FramingError


def combine_validity(framing: bool | None, parser: bool | None) -> bool | None:
    """False if either check failed, True if any passed, None if nothing was checked."""
    if framing is False or parser is False:
        return False
    if framing or parser:
        return True
    return None


class StreamDecoder:
    """Frame decoder + parser for one stream position; feed bytes, get decoded frames."""

    __slots__ = ("_decoder", "_parser", "frames_dropped", "validate")

    def __init__(self, decoder: Any, parser: Parser | None = None) -> None:
        self._decoder = decoder
        self._parser = parser
        self.validate = self._parser.validate if self._parser is not None else False
        self.frames_dropped = 0

    @property
    def bytes_skipped(self) -> int:
        """Bytes so far that went into no frame (garbage, false syncs, bytes before an NMEA ``$``);
        0 for framings that never skip (line, delimiter, length_prefixed, slip, cobs)."""
        skipped = getattr(self._decoder, "bytes_skipped", 0)
        return skipped if isinstance(skipped, int) else 0

    @property
    def pending_start(self) -> int:
        """Absolute offset of the first byte not yet part of an emitted (or dropped) frame."""
        return self._decoder.pending_start

    def reset(self, offset: int) -> None:
        """Drop partial state after a gap; the next byte fed is at absolute ``offset``."""
        self._decoder.reset(offset)

    def feed(self, data: bytes) -> list[DecodedEvent]:
        """Consume ``data``; return decoded frames and framing errors, in stream order."""
        return self._process(self._decoder.feed(data))

    def silence(self) -> list[DecodedEvent]:
        """The line went quiet (Modbus RTU: 3.5 characters, see ``modbus_rtu.silence_seconds``):
        framings that end frames at a silence do so; the others ignore it."""
        silence = getattr(self._decoder, "silence", None)
        if callable(silence):
            return self._process(silence())
        # A console's prompt is the unterminated tail: when the parser recognises it, it is a frame.
        judge = getattr(self._parser, "is_prompt", None)
        tail_of = getattr(self._decoder, "tail", None)
        if callable(judge) and callable(tail_of):
            tail = tail_of()
            if tail and judge(tail):
                return self._process(self._decoder.flush())
        return []

    def flush(self) -> list[DecodedEvent]:
        """End of stream (offline decode): emit a trailing unterminated frame where meaningful."""
        return self._process(self._decoder.flush())

    def _process(self, events: list[FrameEvent]) -> list[DecodedEvent]:
        out: list[DecodedEvent] = []
        parser = self._parser
        validate = self.validate
        for event in events:
            if not isinstance(event, Frame):
                out.append(event)
                continue
            if parser is None:  # nothing asks for validation: keep every frame
                out.append(DecodedFrame(event.data, event.start, event.end, event.checksum_valid))
                continue
            parsed = parser.parse(event.data)
            valid = event.checksum_valid
            if valid is not False and parsed.checksum_valid is not None:  # = combine_validity(), inlined
                valid = parsed.checksum_valid
            if validate and valid is False:
                self.frames_dropped += 1
                continue
            out.append(DecodedFrame(event.data, event.start, event.end, valid, parsed.fields, parsed.final))
        return out
