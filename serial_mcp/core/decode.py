"""The RX decode pipeline: framing decoder + optional parser + checksum validation (sans-IO).

Kept per cursor by the RX engine, so a frame torn across two reads is decoded whole.
With the parser's ``validate`` true, a frame whose checksum (framing-level or parser-level)
is bad is dropped and counted in ``frames_dropped``; otherwise it is emitted with
``checksum_valid`` False. A frame the parser hid (``Parsed.shown`` False: ``esp_log``'s
``print_filter``) is left out and counted in ``frames_filtered``. Bytes the framing skipped as
belonging to no frame (binary, gnss, modbus_rtu, nmea framings) are counted in ``bytes_skipped``.
FramingErrors pass through and decoding continues after them.

The ``nmea0183`` preset (nmea framing + nmea parser) has a fast route for chunks of plain text:
the framing hands over the chunk's lines in one list (``NmeaLineDecoder.feed_lines``) and the
parser turns them into decoded frames in one pass (``parsers.nmea.parse_lines``), without a
``Frame`` per line; the frames, fields and counters are those of the general route.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast, runtime_checkable

from serial_mcp.core.framing.base import Frame, FrameEvent, FramingError
from serial_mcp.core.framing.config import build_decoder
from serial_mcp.core.framing.gnss import NmeaLineDecoder
from serial_mcp.core.framing.scan import declares
from serial_mcp.core.parsers.base import Parser
from serial_mcp.core.parsers.config import build_parser
from serial_mcp.core.parsers.nmea import NmeaParser, parse_lines

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
    # a bad checksum the framing split off: ``computed X, received Y``
    detail: str | None = field(default=None, compare=False)


DecodedEvent = DecodedFrame | FramingError


def combine_validity(framing: bool | None, parser: bool | None) -> bool | None:
    """False if either check failed, True if any passed, None if nothing was checked."""
    if framing is False or parser is False:
        return False
    if framing or parser:
        return True
    return None


# What a framing or parser may offer beyond ``FrameDecoder`` / ``Parser``: declared, never probed for.
@runtime_checkable
class Skips(Protocol):
    """A framing that skips bytes belonging to no frame (scan-based, start_end, nmea)."""

    @property
    def bytes_skipped(self) -> int: ...


@runtime_checkable
class EndsAtSilence(Protocol):
    """A framing that ends a frame when the line goes quiet (scan-based: Modbus RTU, gnss, binary)."""

    def silence(self) -> list[FrameEvent]: ...


@runtime_checkable
class KnowsDamage(Protocol):
    """A framing that can tell a waiting candidate already failed its check (Modbus RTU)."""

    def damaged_pending(self) -> int | None: ...

    def damaged_frame(self) -> Frame | None: ...

    def pending_bytes(self) -> bytes: ...


@runtime_checkable
class HasTail(Protocol):
    """A framing that shows its unterminated tail (separator-based: line, delimiter, slip, cobs)."""

    def tail(self) -> bytes: ...


@runtime_checkable
class JudgesPrompt(Protocol):
    """A parser that recognises a console's prompt in an unterminated tail (shell_prompt)."""

    def is_prompt(self, tail: bytes) -> bool: ...


@runtime_checkable
class ParsesFields(Protocol):
    """A parser with ``parse_fields(payload) -> (fields, checksum_valid)`` (never final): the same
    verdict as ``parse`` without a ``Parsed`` per frame (NMEA: the hot path)."""

    def parse_fields(self, payload: bytes) -> tuple[dict[str, Any], bool | None]: ...


class StreamDecoder:
    """Frame decoder + parser for one stream position; feed bytes, get decoded frames."""

    __slots__ = (
        "_decoder", "_fields", "_lines_of", "_parser", "frames_dropped", "frames_filtered", "rejected",
        "validate",
    )  # fmt: skip

    def __init__(self, rx_framing: object, rx_parser: object | None = None, offset: int = 0) -> None:
        self._decoder = build_decoder(rx_framing, offset)
        self._parser: Parser | None = build_parser(rx_parser) if rx_parser is not None else None
        self.validate = self._parser.validate if self._parser is not None else False
        self.frames_dropped = 0
        self.frames_filtered = 0  # frames the parser hid (a print filter), not bad ones
        # issue 26: set to a list and each frame ``validate`` drops is appended to it too (marked
        # bad), so a read can name its bad frames and a summary count them by type; the reader
        # drains it. None (the default) costs nothing.
        self.rejected: list[DecodedFrame] | None = None
        parser = self._parser
        self._fields = cast(ParsesFields, parser).parse_fields if declares(parser, ParsesFields) else None
        decoder = self._decoder
        self._lines_of: Callable[[bytes], tuple[list[bytes], int, list[FramingError]] | None] | None = (
            decoder.feed_lines
            if type(decoder) is NmeaLineDecoder and type(self._parser) is NmeaParser
            else None
        )

    @property
    def bytes_skipped(self) -> int:
        """Bytes so far that went into no frame (garbage, false syncs, bytes before an NMEA ``$``);
        0 for framings that never skip (line, delimiter, length_prefixed, slip, cobs)."""
        decoder = self._decoder
        return cast(Skips, decoder).bytes_skipped if declares(decoder, Skips) else 0

    @property
    def pending_start(self) -> int:
        """Absolute offset of the first byte not yet part of an emitted (or dropped) frame."""
        return self._decoder.pending_start

    def damaged_pending(self) -> int | None:
        """The offset of a waiting candidate that already failed its check at a shorter shape
        (Modbus RTU: a damaged reply, or a request still arriving), else None."""
        decoder = self._decoder
        return cast(KnowsDamage, decoder).damaged_pending() if declares(decoder, KnowsDamage) else None

    def damaged_frame(self) -> DecodedFrame | None:
        """The candidate of :meth:`damaged_pending` as a bad frame (parsed), for a summary to count."""
        decoder = self._decoder
        frame = cast(KnowsDamage, decoder).damaged_frame() if declares(decoder, KnowsDamage) else None
        if frame is None:
            return None
        parsed = self._parser.parse(frame.data).fields if self._parser is not None else None
        return DecodedFrame(frame.data, frame.start, frame.end, False, parsed, detail=frame.detail)

    def end_damaged(self) -> list[DecodedEvent]:
        """End of stream with a damaged frame waiting (:meth:`damaged_frame`): that frame, bad, then
        what the bytes after it hold; nothing if none waits. Then :meth:`flush` as usual."""
        frame = self.damaged_frame()
        if frame is None:  # only a KnowsDamage framing has one
            return []
        rest = cast(KnowsDamage, self._decoder).pending_bytes()[frame.end - frame.start :]
        self._decoder.reset(frame.end)
        return [frame, *self.feed(rest)]

    def reset(self, offset: int) -> None:
        """Drop partial state after a gap; the next byte fed is at absolute ``offset``."""
        self._decoder.reset(offset)

    def feed(self, data: bytes) -> list[DecodedEvent]:
        """Consume ``data``; return decoded frames and framing errors, in stream order."""
        lines_of = self._lines_of
        if lines_of is not None:  # nmea0183: the fast route, when the chunk allows it
            route = lines_of(data)
            if route is not None:
                lines, start, errors = route
                out: list[DecodedEvent] = []
                if lines and self.rejected is not None and self.validate:
                    self._keep_rejected(lines, start, out)
                elif lines:
                    self.frames_dropped += parse_lines(lines, start, out, DecodedFrame, self.validate)
                out += errors
                return out
        return self._process(self._decoder.feed(data))

    def _keep_rejected(self, lines: list[bytes], start: int, out: list[DecodedEvent]) -> None:
        """The fast route with bad sentences kept aside (in ``rejected``) rather than dropped."""
        parsed: list[DecodedFrame] = []
        parse_lines(lines, start, parsed, DecodedFrame, False)
        rejected = self.rejected
        assert rejected is not None
        for frame in parsed:
            if frame.checksum_valid is False:
                rejected.append(frame)
                self.frames_dropped += 1
            else:
                out.append(frame)

    def silence(self) -> list[DecodedEvent]:
        """The line went quiet (Modbus RTU: 3.5 characters, see ``modbus_rtu.silence_seconds``):
        framings that end frames at a silence do so; the others ignore it."""
        decoder, parser = self._decoder, self._parser
        if declares(decoder, EndsAtSilence):
            return self._process(cast(EndsAtSilence, decoder).silence())
        # A console's prompt is the unterminated tail: when the parser recognises it, it is a frame.
        if declares(parser, JudgesPrompt) and declares(decoder, HasTail):
            tail = cast(HasTail, decoder).tail()
            if tail and cast(JudgesPrompt, parser).is_prompt(tail):
                return self._process(decoder.flush())
        return []

    def flush(self) -> list[DecodedEvent]:
        """End of stream (offline decode): emit a trailing unterminated frame where meaningful."""
        return self._process(self._decoder.flush())

    def _process(self, events: list[FrameEvent]) -> list[DecodedEvent]:
        out: list[DecodedEvent] = []
        parser = self._parser
        if parser is None:  # nothing asks for validation: keep every frame
            for event in events:
                if isinstance(event, Frame):
                    frame = DecodedFrame(event.data, event.start, event.end, event.checksum_valid)
                    frame.detail = event.detail
                    out.append(frame)
                else:
                    out.append(event)
            return out
        if self._fields is not None:  # a ParsesFields parser: the same verdict, faster
            return self._process_fields(events, self._fields, out)
        validate = self.validate
        for event in events:
            if not isinstance(event, Frame):
                out.append(event)
                continue
            parsed = parser.parse(event.data)
            if not parsed.shown:
                self.frames_filtered += 1
                continue
            valid = event.checksum_valid
            if valid is not False and parsed.checksum_valid is not None:  # = combine_validity(), inlined
                valid = parsed.checksum_valid
            if validate and valid is False:
                self.frames_dropped += 1
                if self.rejected is not None:
                    bad = DecodedFrame(event.data, event.start, event.end, False, parsed.fields, parsed.final)
                    bad.detail = event.detail
                    self.rejected.append(bad)
                continue
            data, start, end = event.data, event.start, event.end
            out.append(DecodedFrame(data, start, end, valid, parsed.fields, parsed.final, event.detail))
        return out

    def _process_fields(
        self,
        events: list[FrameEvent],
        parse_fields: Callable[[bytes], tuple[dict[str, Any], bool | None]],
        out: list[DecodedEvent],
    ) -> list[DecodedEvent]:
        validate = self.validate
        append = out.append
        dropped = 0
        for event in events:
            if not isinstance(event, Frame):
                append(event)
                continue
            data = event.data
            fields, parsed_valid = parse_fields(data)
            valid = event.checksum_valid
            if valid is not False and parsed_valid is not None:  # = combine_validity(), inlined
                valid = parsed_valid
            if validate and valid is False:
                dropped += 1
                if self.rejected is not None:
                    self.rejected.append(DecodedFrame(data, event.start, event.end, False, fields))
                continue
            append(DecodedFrame(data, event.start, event.end, valid, fields))
        self.frames_dropped += dropped
        return out
