"""Line framing: LF, CR, CRLF, or ``auto`` (all three mixed in one stream).

``auto`` treats CRLF as one terminator even when CR and LF arrive in different chunks. A
line ending in CR is emitted as soon as the CR arrives (no waiting for a possible LF, so a
CR-only device's last line is not held back); an LF right after that CR is then skipped.
Hence in ``auto`` mode a CRLF line's ``Frame.end`` stops after the CR and the LF belongs
to no frame. With ``include_terminators`` the decoder instead waits for the byte after a CR,
so ``data`` is exactly the raw bytes ``[start, end)`` including the full CRLF.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from serial_mcp import messages
from serial_mcp.core.framing._receivebuffer import as_bytes
from serial_mcp.core.framing.base import DEFAULT_MAX_LENGTH, Frame, FrameEvent, FramingError
from serial_mcp.core.framing.separated import SeparatorDecoder

Ending = Literal["auto", "lf", "cr", "crlf"]
ENDINGS: Final[dict[str, bytes]] = {"lf": b"\n", "cr": b"\r", "crlf": b"\r\n"}

_EOL = re.compile(rb"[\r\n]")
_AUTO_SPLIT = re.compile(rb"(\r\n?|\n)")
_CR, _LF = 0x0D, 0x0A


def _find_eol(buf: bytearray, start: int) -> tuple[int, int] | None:
    """The first CR or LF in ``buf`` (a one-byte terminator; a CRLF's LF is handled after)."""
    m = _EOL.search(buf, start)
    return None if m is None else (m.start(), 1)


class LineDecoder(SeparatorDecoder):
    """Splits a byte stream into lines; see the module docstring for ``auto``."""

    __slots__ = ("_auto", "_include", "_skip_empty", "_skip_lf")

    def __init__(
        self,
        ending: Ending | str = "auto",
        include_terminators: bool = False,
        skip_empty: bool = False,
        offset: int = 0,
        max_length: int = DEFAULT_MAX_LENGTH,
    ) -> None:
        if ending != "auto" and ending not in ENDINGS:
            raise ValueError(f"unknown line ending {ending!r}")
        self._auto = ending == "auto"
        super().__init__(b"\n" if self._auto else ENDINGS[ending], offset=offset, max_length=max_length)
        self._include = include_terminators
        self._skip_empty = skip_empty
        self._skip_lf = False  # auto: the previous frame ended on a CR at the end of a chunk

    def reset(self, offset: int) -> None:
        """Drop partial state; the next byte fed is at absolute ``offset``."""
        super().reset(offset)
        self._skip_lf = False

    def _cut(self, piece: bytes, start: int, end: int, term: bytes) -> FrameEvent | None:
        if self._skip_empty and not piece:
            return None
        return Frame(piece + term if self._include else piece, start, end)

    def _tail(self, piece: bytes, start: int) -> FrameEvent | None:
        term = b""
        if self._auto and self._include and piece.endswith(b"\r"):  # a held CR: a complete line
            piece, term = piece[:-1], b"\r"
        if len(piece) > self.max_length:
            return FramingError(messages.FRAMING_TOO_LONG.format(max_length=self.max_length), start)
        return self._cut(piece, start, start + len(piece) + len(term), term)

    # --- auto mode --------------------------------------------------------------------------------

    def feed(self, data: bytes) -> list[FrameEvent]:
        """Consume ``data``; return the lines and errors it completes."""
        if not self._auto:
            return super().feed(data)
        out: list[FrameEvent] = []
        if not data:
            return out
        data = as_bytes(data)
        rx = self._rx
        if self._skip_lf:
            self._skip_lf = False
            if data[0] == _LF:  # second half of a CRLF whose CR already ended a line
                rx.base += 1
                data = data[1:]
                if not data:
                    return out
        buf = rx.buf
        if self._discarding:
            rest = rx.discard_through(data, _find_eol, 0)
            if rest is None:
                return out
            self._discarding = False
            work = rest
            if data[len(data) - len(rest) - 1] == _CR:  # the terminator was a CR: maybe CRLF
                if not work:
                    self._skip_lf = True
                    return out
                if work[0] == _LF:
                    rx.base += 1
                    work = work[1:]
        elif buf:
            buf += data
            m = _EOL.search(buf, rx.scan)
            if m is None or (self._include and m.start() == len(buf) - 1 and buf[-1] == _CR):
                rx.scan = len(buf) if m is None else len(buf) - 1
                self._check_overflow(out)
                return out
            work = bytes(buf)
            buf.clear()
            rx.scan = 0
        else:
            work = data
        if work:
            self._split(work, out)
        return out

    def _split(self, work: bytes, out: list[FrameEvent]) -> None:
        if not self._auto:
            super()._split(work, out)
            return
        if b"\r" not in work:
            pieces = work.split(b"\n")
            terms = [b"\n"] * (len(pieces) - 1)
        elif b"\n" not in work:
            pieces = work.split(b"\r")
            terms = [b"\r"] * (len(pieces) - 1)
        elif work.count(b"\r\n") == work.count(b"\n") == work.count(b"\r"):  # CRLF only: no regex
            pieces = work.split(b"\r\n")
            terms = [b"\r\n"] * (len(pieces) - 1)
        elif work[-1] != _CR and work.count(b"\r") == work.count(b"\r\n"):  # LF and CRLF mixed
            self._split_lf_crlf(work, out)
            return
        else:
            parts = _AUTO_SPLIT.split(work)
            pieces = parts[0::2]
            terms = parts[1::2]
        rest = pieces.pop()
        cr_at_end = not rest and terms and terms[-1] == b"\r"
        held = False
        if cr_at_end and self._include:  # wait for the next byte: it may be the LF of this CRLF
            rest = pieces.pop() + terms.pop()
            held = True
        rx = self._rx
        pos = rx.base
        limit = self.max_length
        include = self._include
        skip_empty = self._skip_empty
        for piece, term in zip(pieces, terms, strict=True):
            raw_end = pos + len(piece) + len(term)
            if len(piece) > limit:
                out.append(FramingError(messages.FRAMING_TOO_LONG.format(max_length=limit), pos))
            elif piece or not skip_empty:
                if include:
                    out.append(Frame(piece + term, pos, raw_end))
                else:
                    out.append(Frame(piece, pos, pos + len(piece) + 1))
            pos = raw_end
        rx.base = pos
        if cr_at_end and not include:
            self._skip_lf = True
        if rest:
            rx.buf += rest
            rx.scan = len(rest) - 1 if held else len(rest)
            self._check_overflow(out)

    def _split_lf_crlf(self, work: bytes, out: list[FrameEvent]) -> None:
        """``auto`` over bytes whose every CR starts a CRLF and that do not end in CR (LF and CRLF
        lines mixed, as in NMEA + AIS logs): one split on LF, a piece's trailing CR is its
        CRLF's. The same frames as the regex split, without a terminator object per line."""
        pieces = work.split(b"\n")
        rest = pieces.pop()
        rx = self._rx
        pos = rx.base
        limit = self.max_length
        include = self._include
        skip_empty = self._skip_empty
        for raw in pieces:
            raw_end = pos + len(raw) + 1
            piece = raw[:-1] if raw[-1:] == b"\r" else raw
            if len(piece) > limit:
                out.append(FramingError(messages.FRAMING_TOO_LONG.format(max_length=limit), pos))
            elif piece or not skip_empty:
                if include:
                    out.append(Frame(raw + b"\n", pos, raw_end))
                else:
                    out.append(Frame(piece, pos, pos + len(piece) + 1))
            pos = raw_end
        rx.base = pos
        if rest:
            rx.buf += rest
            rx.scan = len(rest)
            self._check_overflow(out)

    def _check_overflow(self, out: list[FrameEvent]) -> None:
        if not self._auto:
            super()._check_overflow(out)
            return
        rx = self._rx
        buf = rx.buf
        held = self._include and buf[-1:] == b"\r"
        if len(buf) - held > self.max_length:
            out.append(FramingError(messages.FRAMING_TOO_LONG.format(max_length=self.max_length), rx.base))
            rx.base += len(buf)
            buf.clear()
            rx.scan = 0
            if held:
                self._skip_lf = True
            else:
                self._discarding = True


class LineEncoder:
    """Appends the line ending to each payload, unless it already ends with it (``AT\r`` under a
    CR framing is sent as is, not as ``AT\r\r``)."""

    __slots__ = ("ending",)

    def __init__(self, ending: str = "lf") -> None:
        self.ending = ENDINGS[ending]

    def encode(self, payload: bytes) -> bytes:
        """``payload`` followed by the line ending (once)."""
        return payload if payload.endswith(self.ending) else payload + self.ending
