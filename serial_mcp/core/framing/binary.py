"""Declarative binary frames: ``sync · [header] · length · payload · checksum`` (rx/tx type ``binary``).

A :class:`BinaryLayout` describes one frame format: its sync word alternatives, a length
field (or a fixed frame length), the header length, a checksum over a declared byte range
at a declared position, and the longest plausible frame. It is a
:class:`~serial_mcp.core.framing.scan.FrameRule`, so the scanning engine resynchronises on
the next sync word after garbage, an impossible length or a bad checksum.

``Frame.data`` is the frame without its sync word, length field and checksum (other header
bytes kept); with ``include_terminators`` it is the raw frame. TX is the mirror image: the
encoder takes exactly that ``data`` and inserts sync, length and checksum.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from serial_mcp import messages
from serial_mcp.core import checksums
from serial_mcp.core.framing.base import Frame, crc_text
from serial_mcp.core.framing.scan import NEED, REJECT, ScanDecoder
from serial_mcp.errors import InvalidArgument

Order = Literal["big", "little"]
Counts = Literal["payload", "frame", "from"]


@dataclass(frozen=True, slots=True)
class LengthField:
    """Where the length is and what it counts.

    ``counts``: ``payload`` (bytes between the header and a trailing checksum), ``frame``
    (the whole frame) or ``from`` (bytes from offset ``start`` to the frame's end).
    The frame length is that count plus ``adjust``. ``mask`` keeps only some bits (RTCM3's
    10-bit length inside a 16-bit field).
    """

    offset: int
    size: int = 1
    endianness: Order = "big"
    counts: Counts = "payload"
    start: int = 0
    adjust: int = 0
    mask: int | None = None

    @property
    def end(self) -> int:
        """Offset just past the field."""
        return self.offset + self.size

    @property
    def largest(self) -> int:
        """The largest value the field can hold."""
        top = (1 << (8 * self.size)) - 1
        return top if self.mask is None else top & self.mask


@dataclass(frozen=True, slots=True)
class FrameChecksum:
    """A checksum of ``frame[start:stop]`` stored at ``position`` (None = the frame's last bytes).

    ``stop`` None means "up to the checksum" (position end) or "to the frame's end"; a
    negative ``stop`` counts from the frame's end, as a Python slice does.
    """

    algorithm: str
    width: int
    endianness: Order = "big"
    start: int = 0
    stop: int | None = None
    position: int | None = None

    def bounds(self, total: int) -> tuple[int, int, int]:
        """``(checksum offset, range start, range stop)`` inside a frame of ``total`` bytes."""
        at = total - self.width if self.position is None else self.position
        stop = self.stop
        if stop is None:
            stop = at if self.position is None else total
        elif stop < 0:
            stop += total
        return at, self.start, stop


class _Check:
    """A FrameChecksum with its function and offsets resolved, checked in place in the work bytes."""

    __slots__ = ("at", "at_from_end", "fn", "mask", "order", "start", "stop", "stop_from_end", "width")

    def __init__(self, spec: FrameChecksum) -> None:
        self.fn = checksums.function(spec.algorithm)
        self.width = spec.width
        self.mask = (1 << (8 * spec.width)) - 1
        self.order: Order = spec.endianness
        self.start = spec.start
        self.at_from_end = spec.position is None
        self.at = -spec.width if spec.position is None else spec.position
        self.stop, self.stop_from_end = (0, True) if spec.position is not None else (self.at, True)
        if spec.stop is not None:
            self.stop, self.stop_from_end = spec.stop, spec.stop < 0

    def value(self, work: bytes | bytearray, s: int, e: int) -> int:
        """The checksum of the covered range of the frame ``work[s:e]``."""
        stop = (e if self.stop_from_end else s) + self.stop
        return self.fn(bytes(work[s + self.start : stop])) & self.mask

    def detail(self, work: bytes, s: int, e: int) -> str:
        """The computed and received checksum of the frame ``work[s:e]``."""
        at = (e if self.at_from_end else s) + self.at
        received = int.from_bytes(work[at : at + self.width], self.order)
        return crc_text(self.value(work, s, e), received, self.width)

    def check(self, work: bytes, s: int, e: int) -> bool:
        """Does the frame ``work[s:e]`` carry the right checksum?"""
        at = (e if self.at_from_end else s) + self.at
        stop = (e if self.stop_from_end else s) + self.stop
        received = int.from_bytes(work[at : at + self.width], self.order)
        return (self.fn(work[s + self.start : stop]) & self.mask) == received


Span = tuple[int, bool, int, bool]  # (start, start counts from the end, stop, stop counts from the end)


class BinaryLayout:
    """One binary frame format (a FrameRule); see the module docstring."""

    __slots__ = (
        "_cks",
        "_field",
        "_keep",
        "_len_add",
        "checksum",
        "fast_frame",
        "fixed_length",
        "header_length",
        "include_terminators",
        "length",
        "max_length",
        "min_length",
        "skip_empty",
        "syncs",
    )

    def __init__(
        self,
        syncs: Sequence[bytes],
        length: LengthField | int,
        *,
        header_length: int | None = None,
        checksum: FrameChecksum | None = None,
        max_length: int = 65536,
        include_terminators: bool = False,
        skip_empty: bool = False,
    ) -> None:
        if not syncs or not all(syncs):
            raise ValueError("binary framing needs at least one non-empty sync word")
        self.syncs = tuple(syncs)
        self.fixed_length = length if isinstance(length, int) else None
        self.length = length if isinstance(length, LengthField) else None
        field_end = self.length.end if self.length is not None else max(len(s) for s in self.syncs)
        self.header_length = field_end if header_length is None else header_length
        self.checksum = checksum
        trailer = checksum.width if checksum is not None and checksum.position is None else 0
        least = max(self.header_length, field_end) + trailer
        if checksum is not None and checksum.position is not None:
            least = max(least, checksum.position + checksum.width)
        self.min_length = least
        self.max_length = max_length
        self.include_terminators = include_terminators
        self.skip_empty = skip_empty
        self._len_add = self._length_offset(trailer)
        f = self.length
        self._field = None if f is None else (f.offset, f.end, f.endianness, f.mask)
        self._cks = None if checksum is None else _Check(checksum)
        self._keep = {len(s): self._plan(len(s)) for s in self.syncs}
        # What the scan engine calls per frame: ``frame`` with its offsets bound, unless a subclass
        # has a ``frame`` of its own.
        self.fast_frame: Callable[[bytes, int, int, int], Frame | None] | None = (
            self._fast_frame() if type(self).frame is BinaryLayout.frame else None
        )

    @property
    def resync_on_bad(self) -> bool:
        """A bad frame with a sync word inside is resynchronised past (never hides a good one)."""
        return True

    def _length_offset(self, trailer: int) -> int:
        """What to add to the length field's value to get the frame length."""
        f = self.length
        if f is None:
            return 0
        if f.counts == "payload":
            return self.header_length + trailer + f.adjust
        if f.counts == "frame":
            return f.adjust
        return f.start + f.adjust

    def _plan(self, sync: int) -> list[Span]:
        """The spans of a frame that make ``data``: all but the sync, length field and checksum.

        Offsets from the start all lie in the header (below ``min_length``) and a trailing
        checksum is counted from the end, so one plan serves every frame length.
        """
        head = [(0, sync)]
        if self.length is not None:
            head.append((self.length.offset, self.length.end))
        c = self.checksum
        if c is not None and c.position is not None:
            head.append((c.position, c.position + c.width))
        head.sort()
        keep: list[Span] = []
        pos = 0
        for a, b in head:
            if a > pos:
                keep.append((pos, False, a, False))
            pos = max(pos, b)
        tail = -c.width if c is not None and c.position is None else 0
        keep.append((pos, False, tail, True))
        return keep

    # --- the length arithmetic (RX and TX) --------------------------------------------------------

    def value_for(self, total: int) -> int:
        """The length-field value for a frame of ``total`` bytes ."""
        return total - self._len_add

    # --- FrameRule --------------------------------------------------------------------------------

    def measure(self, work: bytes, s: int, n: int, final: bool) -> int:
        """The declared frame length at ``s``, NEED, or REJECT when it is impossible."""
        field = self._field
        if field is None:
            return self.fixed_length or REJECT
        offset, end, order, mask = field
        if s + end > n:
            return NEED
        value = work[s + offset] if end - offset == 1 else int.from_bytes(work[s + offset : s + end], order)
        if mask is not None:
            value &= mask
        total = value + self._len_add
        if total < self.min_length or total > self.max_length:
            return REJECT
        return total

    def _data(self, work: bytes, s: int, e: int) -> bytes:
        keep = self._keep
        if len(keep) == 1:
            spans = next(iter(keep.values()))
        else:  # sync alternatives of different lengths: cut at the one that matched
            spans = keep[max(len(a) for a in self.syncs if work.startswith(a, s))]
        if len(spans) == 1:
            a, _, b, _ = spans[0]
            return work[s + a : e + b]
        return b"".join(work[(e if af else s) + a : (e if bf else s) + b] for a, af, b, bf in spans)

    def _fast_frame(self) -> Callable[[bytes, int, int, int], Frame | None] | None:
        """``frame`` for the usual layout, with its offsets bound once (a frame costs one slice for
        the data, one for the checksum's range and the C checksum): one sync length, the data one
        span from the header to the trailing checksum, empty frames kept. None otherwise."""
        if self.skip_empty or self.include_terminators or len(self._keep) != 1:
            return None
        spans = next(iter(self._keep.values()))
        if len(spans) != 1 or spans[0][1] or not spans[0][3]:
            return None
        a, _, b, _ = spans[0]
        cks = self._cks
        if cks is None or not (cks.at_from_end and cks.stop_from_end):
            check = None if cks is None else cks.check

            def framed(work: bytes, s: int, e: int, base: int) -> Frame | None:
                valid = None if check is None else check(work, s, e)
                frame = Frame(work[s + a : e + b], base + s, base + e, valid)
                if valid is False and cks is not None:
                    frame.detail = cks.detail(work, s, e)
                return frame

            return framed
        fn, mask, order, width = cks.fn, cks.mask, cks.order, cks.width
        start, at, stop = cks.start, cks.at, cks.stop
        from_bytes = int.from_bytes

        def checked(work: bytes, s: int, e: int, base: int) -> Frame | None:
            t = e + at
            valid = (fn(work[s + start : e + stop]) & mask) == from_bytes(work[t : t + width], order)
            frame = Frame(work[s + a : e + b], base + s, base + e, valid)
            if not valid:
                frame.detail = cks.detail(work, s, e)
            return frame

        return checked

    def frame(self, work: bytes, s: int, e: int, base: int) -> Frame | None:
        """The frame ``work[s:e]`` with its checksum verdict."""
        if self.skip_empty and e - s <= self.min_length:
            return None
        cks = self._cks
        valid = None if cks is None else cks.check(work, s, e)
        data = work[s:e] if self.include_terminators else self._data(work, s, e)
        detail = cks.detail(work, s, e) if valid is False and cks is not None else None
        return Frame(data, base + s, base + e, valid, detail)

    # --- TX ---------------------------------------------------------------------------------------

    def build(self, data: bytes) -> bytes:
        """The wire frame for ``data`` (the frame minus sync, length field and checksum)."""
        sync = self.syncs[0]
        removed = len(sync) + (self.length.size if self.length is not None else 0)
        removed += self.checksum.width if self.checksum is not None else 0
        total = removed + len(data)
        if self.fixed_length is not None and total != self.fixed_length:
            raise InvalidArgument(
                messages.BINARY_TX_FIXED_LENGTH.format(
                    length=len(data), expected=self.fixed_length - removed, frame=self.fixed_length
                )
            )
        if total < self.min_length:
            raise InvalidArgument(
                messages.BINARY_TX_TOO_SHORT.format(length=len(data), least=self.min_length - removed)
            )
        frame = bytearray(total)
        src = 0
        for a, af, b, bf in self._keep[len(sync)]:
            start, stop = (total if af else 0) + a, (total if bf else 0) + b
            frame[start:stop] = data[src : src + stop - start]
            src += stop - start
        frame[: len(sync)] = sync
        if self.length is not None:
            f = self.length
            value = self.value_for(total)
            if not 0 <= value <= f.largest or total > self.max_length:
                raise InvalidArgument(
                    messages.BINARY_TX_TOO_LONG.format(length=len(data), max_length=self.max_length)
                )
            frame[f.offset : f.end] = value.to_bytes(f.size, f.endianness)
        if self._cks is not None:
            c = self._cks
            at = (total if c.at_from_end else 0) + c.at
            frame[at : at + c.width] = c.value(frame, 0, total).to_bytes(c.width, c.order)
        return bytes(frame)


class BinaryDecoder(ScanDecoder):
    """RX framing ``binary``: the scanning engine over one :class:`BinaryLayout`."""

    __slots__ = ("layout",)

    def __init__(self, layout: BinaryLayout, offset: int = 0) -> None:
        super().__init__([layout], offset)
        self.layout = layout


class BinaryEncoder:
    """TX framing ``binary``: inserts sync, length and checksum around ``data``."""

    __slots__ = ("layout",)

    def __init__(self, layout: BinaryLayout) -> None:
        self.layout = layout

    def encode(self, payload: bytes) -> bytes:
        """See :meth:`BinaryLayout.build`."""
        return self.layout.build(payload)
