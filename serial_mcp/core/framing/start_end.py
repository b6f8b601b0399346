"""Start/end-marker framing: ``<start> payload [checksum] <end>`` (Modbus ASCII ``:``…CRLF).

Bytes between frames that do not begin with a start marker are line noise: they are skipped
(``pending_start`` moves past them) and counted in ``bytes_skipped``. Several start markers
may be given; at one position the longest matching marker wins.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from serial_mcp import messages
from serial_mcp.core.framing._receivebuffer import BufferedDecoder, as_bytes
from serial_mcp.core.framing.base import DEFAULT_MAX_LENGTH, Frame, FrameEvent, FramingError
from serial_mcp.core.framing.checksum import ChecksumSpec, checked


class StartEndDecoder(BufferedDecoder):
    """Incremental decoder for frames opened by one of ``start`` and closed by ``end``."""

    __slots__ = (
        "_checksum",
        "_discarding",
        "_end",
        "_in_frame",
        "_include",
        "_max_start",
        "_skip_empty",
        "_start_re",
        "_starts",
        "max_length",
    )

    def __init__(
        self,
        start: Sequence[bytes],
        end: bytes = b"\r\n",
        include_terminators: bool = False,
        skip_empty: bool = False,
        checksum: ChecksumSpec | None = None,
        offset: int = 0,
        max_length: int = DEFAULT_MAX_LENGTH,
    ) -> None:
        if not start or not all(start) or not end:
            raise ValueError("start markers and end marker must be non-empty")
        self._starts = sorted(set(start), key=len, reverse=True)
        self._start_re = re.compile(b"|".join(re.escape(s) for s in self._starts))
        self._max_start = len(self._starts[0])
        self._end = end
        self._include = include_terminators
        self._skip_empty = skip_empty
        self._checksum = checksum
        self.max_length = max_length
        super().__init__(offset)  # a partial frame (in_frame) or a possible partial start marker
        self._in_frame = False
        self._discarding = False

    @property
    def bytes_skipped(self) -> int:
        """Line noise so far: bytes between frames that no start marker opened."""
        return self._rx.skipped

    def reset(self, offset: int) -> None:
        """Drop partial state; the next byte fed is at absolute ``offset``."""
        self._rx.reset(offset)
        self._in_frame = False
        self._discarding = False

    def flush(self) -> list[FrameEvent]:
        """End of stream: an unterminated frame is dropped (it has no end marker to trust)."""
        rx = self._rx
        if not self._in_frame:
            rx.skip(len(rx.buf))  # a possible partial start marker that never completed
        self.reset(rx.base + len(rx.buf))
        return []

    def _find_end(self, buf: bytearray, start: int) -> tuple[int, int] | None:
        i = buf.find(self._end, start)
        return None if i < 0 else (i, len(self._end))

    def feed(self, data: bytes) -> list[FrameEvent]:
        """Consume ``data``; return the frames and errors it completes."""
        out: list[FrameEvent] = []
        if not data:
            return out
        data = as_bytes(data)
        end = self._end
        k = len(end)
        rx = self._rx
        buf = rx.buf
        if self._discarding:
            rest = rx.discard_through(data, self._find_end, k - 1)
            if rest is None:
                return out
            work = rest
            self._discarding = False
        elif buf:
            buf += data
            if self._in_frame and buf.find(end, rx.scan) < 0:
                rx.scan = max(rx.scan, len(buf) - k + 1)
                self._check_overflow(out)
                return out
            work = bytes(buf)
            buf.clear()
        else:
            work = data
        self._in_frame = False
        rx.scan = 0
        if work:
            self._process(work, out)
        return out

    def _process(self, work: bytes, out: list[FrameEvent]) -> None:
        """Emit every complete frame in ``work`` (which starts at ``_base``); keep what may continue."""
        end = self._end
        k = len(end)
        rx = self._rx
        base = rx.base
        n = len(work)
        pos = 0
        search = self._start_re.search
        while True:
            m = search(work, pos)
            if m is None:
                keep = self._marker_prefix(work, pos)
                rx.skip(n - keep - pos)  # line noise between frames
                rx.base = base + n - keep
                if keep:
                    rx.buf += work[n - keep :]
                return
            s, body = m.start(), m.end()
            rx.skip(s - pos)
            e = work.find(end, body)
            if e < 0:
                rx.base = base + s
                rx.buf += work[s:]
                self._in_frame = True
                rx.scan = max(body - s, n - s - k + 1)
                self._check_overflow(out)
                return
            pos = e + k
            event = self._frame(work, s, body, e, pos, base)
            if event is not None:
                out.append(event)

    def _frame(self, work: bytes, s: int, body: int, e: int, stop: int, base: int) -> FrameEvent | None:
        """The event for the frame ``work[s:stop]`` whose payload is ``work[body:e]``."""
        if e - body > self.max_length:
            return FramingError(messages.FRAMING_TOO_LONG.format(max_length=self.max_length), base + s)
        if self._skip_empty and e == body:
            return None
        data, valid, detail = checked(self._checksum, work[body:e])
        if self._include:
            data = work[s:stop]
        return Frame(data, base + s, base + stop, valid, detail)

    def _marker_prefix(self, work: bytes, pos: int) -> int:
        """Length of the longest tail of ``work[pos:]`` that could begin a start marker."""
        for size in range(min(self._max_start - 1, len(work) - pos), 0, -1):
            tail = work[len(work) - size :]
            if any(marker.startswith(tail) for marker in self._starts):
                return size
        return 0

    def _check_overflow(self, out: list[FrameEvent]) -> None:
        """Give up on a frame whose payload is already longer than ``max_length``."""
        rx = self._rx
        buf = rx.buf
        m = self._start_re.match(buf)
        body = m.end() if m else 0
        keep = len(self._end) - 1
        if len(buf) - body - keep > self.max_length:
            out.append(FramingError(messages.FRAMING_TOO_LONG.format(max_length=self.max_length), rx.base))
            rx.base += len(buf) - keep
            del buf[: len(buf) - keep]
            self._in_frame = False
            rx.scan = 0
            self._discarding = True


@dataclass(frozen=True, slots=True)
class StartEndEncoder:
    """Wraps each payload (plus checksum, if any) in the first start marker and the end marker."""

    start: bytes
    end: bytes = b"\r\n"
    checksum: ChecksumSpec | None = None

    def encode(self, payload: bytes) -> bytes:
        """start + payload [+ checksum] + end."""
        if self.checksum is not None:
            payload = self.checksum.append(payload)
        return self.start + payload + self.end
