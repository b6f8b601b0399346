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
from serial_mcp.core.framing.base import Frame
from serial_mcp.core.framing.scan import NEED, REJECT, ScanDecoder
from serial_mcp.errors import InvalidArgument

__all__ = ["BinaryDecoder", "BinaryEncoder", "BinaryLayout", "FrameChecksum", "LengthField"]

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


class BinaryLayout:
    """One binary frame format (a FrameRule); see the module docstring."""

    __slots__ = (
        "_cks_fn",
        "_cks_mask",
        "_sync_len",
        "checksum",
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
        self._sync_len = {len(s) for s in self.syncs}
        self.fixed_length = length if isinstance(length, int) else None
        self.length = length if isinstance(length, LengthField) else None
        field_end = self.length.end if self.length is not None else max(self._sync_len)
        self.header_length = field_end if header_length is None else header_length
        self.checksum = checksum
        self._cks_fn: Callable[[bytes], int] | None = None
        self._cks_mask = 0
        if checksum is not None:
            self._cks_fn = checksums.function(checksum.algorithm)
            self._cks_mask = (1 << (8 * checksum.width)) - 1
        trailer = checksum.width if checksum is not None and checksum.position is None else 0
        least = max(self.header_length, field_end) + trailer
        if checksum is not None and checksum.position is not None:
            least = max(least, checksum.position + checksum.width)
        self.min_length = least
        self.max_length = max_length
        self.include_terminators = include_terminators
        self.skip_empty = skip_empty

    @property
    def resync_on_bad(self) -> bool:
        """A bad frame with a sync word inside is resynchronised past (never hides a good one)."""
        return True

    # --- the length arithmetic (RX and TX) --------------------------------------------------------

    def _trailer(self) -> int:
        c = self.checksum
        return c.width if c is not None and c.position is None else 0

    def total_for(self, value: int) -> int:
        """The frame length a length-field ``value`` declares."""
        f = self.length
        assert f is not None
        if f.counts == "payload":
            return self.header_length + value + self._trailer() + f.adjust
        if f.counts == "frame":
            return value + f.adjust
        return f.start + value + f.adjust

    def value_for(self, total: int) -> int:
        """The length-field value for a frame of ``total`` bytes (the inverse of total_for)."""
        f = self.length
        assert f is not None
        if f.counts == "payload":
            return total - self.header_length - self._trailer() - f.adjust
        if f.counts == "frame":
            return total - f.adjust
        return total - f.start - f.adjust

    # --- FrameRule --------------------------------------------------------------------------------

    def measure(self, work: bytes, s: int, n: int, final: bool) -> int:
        """The declared frame length at ``s``, NEED, or REJECT when it is impossible."""
        if self.fixed_length is not None:
            return self.fixed_length
        f = self.length
        assert f is not None
        stop = s + f.end
        if stop > n:
            return NEED
        value = int.from_bytes(work[s + f.offset : stop], f.endianness)
        if f.mask is not None:
            value &= f.mask
        total = self.total_for(value)
        if total < self.min_length or total > self.max_length:
            return REJECT
        return total

    def _cuts(self, raw: bytes, total: int) -> list[tuple[int, int]]:
        """The spans that are not ``data``: sync word, length field, checksum (sorted)."""
        sync = (
            max(len(a) for a in self.syncs if raw.startswith(a))
            if len(self._sync_len) > 1
            else len(self.syncs[0])
        )
        cuts = [(0, sync)]
        if self.length is not None:
            cuts.append((self.length.offset, self.length.end))
        if self.checksum is not None:
            at = self.checksum.bounds(total)[0]
            cuts.append((at, at + self.checksum.width))
        cuts.sort()
        return cuts

    def verify(self, raw: bytes) -> bool | None:
        """Does the frame's checksum match (None without a checksum)?"""
        c = self.checksum
        if c is None or self._cks_fn is None:
            return None
        at, start, stop = c.bounds(len(raw))
        received = int.from_bytes(raw[at : at + c.width], c.endianness)
        return (self._cks_fn(raw[start:stop]) & self._cks_mask) == received

    def payload_of(self, raw: bytes) -> bytes:
        """``raw`` without sync word, length field and checksum."""
        pieces = []
        pos = 0
        for a, b in self._cuts(raw, len(raw)):
            if a > pos:
                pieces.append(raw[pos:a])
            pos = max(pos, b)
        pieces.append(raw[pos:])
        return b"".join(pieces)

    def frame(self, work: bytes, s: int, e: int, base: int) -> Frame | None:
        """The frame ``work[s:e]`` with its checksum verdict."""
        raw = work[s:e]
        valid = self.verify(raw)
        data = raw if self.include_terminators else self.payload_of(raw)
        if self.skip_empty and e - s <= self.min_length:
            return None
        return Frame(data, base + s, base + e, valid)

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
        value = 0
        if self.length is not None:
            value = self.value_for(total)
            if not 0 <= value <= self.length.largest or total > self.max_length:
                raise InvalidArgument(
                    messages.BINARY_TX_TOO_LONG.format(length=len(data), max_length=self.max_length)
                )
        frame = bytearray(total)
        frame[: len(sync)] = sync
        cuts = [(0, len(sync))]
        if self.length is not None:
            f = self.length
            frame[f.offset : f.end] = value.to_bytes(f.size, f.endianness)
            cuts.append((f.offset, f.end))
        if self.checksum is not None:
            at = self.checksum.bounds(total)[0]
            cuts.append((at, at + self.checksum.width))
        cuts.sort()
        pos = src = 0
        for a, b in cuts:
            if a > pos:
                frame[pos:a] = data[src : src + a - pos]
                src += a - pos
            pos = max(pos, b)
        frame[pos:] = data[src:]
        if self.checksum is not None and self._cks_fn is not None:
            c = self.checksum
            at, start, stop = c.bounds(total)
            value = self._cks_fn(bytes(frame[start:stop])) & self._cks_mask
            frame[at : at + c.width] = value.to_bytes(c.width, c.endianness)
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
