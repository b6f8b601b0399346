"""GNSS receiver framings: UBX, RTCM3, the mixed NMEA+UBX+RTCM3 stream, and resynchronising NMEA lines.

* ``ubx``: ``B5 62 class id len16le payload ck_a ck_b`` (8-bit Fletcher over class..payload).
* ``rtcm3``: ``D3 000000ll llllllll payload crc24q`` (6 reserved bits zero, 10-bit length).
* ``gnss``: the three in one stream (u-blox receivers interleave them), each frame found at
  its own sync (``$``/``!``, ``B5 62``, ``D3``) with the scanning engine, so binary bytes never
  end up inside an NMEA sentence and garbage between frames is counted in ``bytes_skipped``.
  ``Frame.data`` is the raw frame (an NMEA sentence without its line ending).
* ``nmea``: line framing for the ``nmea0183`` preset that starts a sentence at its ``$``/``!``
  when binary bytes precede it on the same line (those bytes are skipped and counted);
  a line of printable text is framed exactly as ``line`` framing frames it.

A ``$`` or ``!`` inside binary data (UBX payloads, RTCM3, torn frames) is often followed by a few
printable bytes and a CR or LF byte: ``$>"``. Such a candidate has no ``*hh`` checksum field, so
it is a sentence only if it starts like one (``$GPTXT,``, ``$PMTK001,``, ``!AIVDM,``: an address
of three or more capitals and digits, then a comma, and no other ``$``/``!`` after it); otherwise
its bytes are skipped and counted, never a frame. A candidate with ``*hh`` is a sentence, good or
bad as its checksum says.
"""

from __future__ import annotations

import re
import zlib
from typing import Final

from serial_mcp import messages
from serial_mcp.core import checksums
from serial_mcp.core.framing._receivebuffer import as_bytes
from serial_mcp.core.framing.base import DEFAULT_MAX_LENGTH, Frame, FrameEvent, FramingError
from serial_mcp.core.framing.binary import BinaryLayout, FrameChecksum, LengthField
from serial_mcp.core.framing.line import LineDecoder
from serial_mcp.core.framing.scan import NEED, REJECT, ScanDecoder
from serial_mcp.errors import InvalidArgument

#: Longest NMEA/AIS sentence accepted (the standard says 82; proprietary ones run longer).
NMEA_MAX: Final = 256
UBX_MAX_PAYLOAD: Final = 8192
_CR, _LF = 0x0D, 0x0A
_NOT_PRINTABLE = re.compile(rb"[^\x20-\x7e]")
_HEX_DIGITS = "0123456789abcdefABCDEF"
_CHECKSUM_FIELD: Final = {(a + b).encode(): int(a + b, 16) for a in _HEX_DIGITS for b in _HEX_DIGITS}
# ``*HH`` -> XOR of a whole sentence with a right HH, but for its start character: the body's XOR
# (HH's value) folded with the XOR of ``*`` and the two digit characters.
_LINE_XOR: Final = {b"*" + key: value ^ 0x2A ^ key[0] ^ key[1] for key, value in _CHECKSUM_FIELD.items()}
# What a sentence without ``*hh`` must start with to be one (the address field, then a comma).
_SENTENCE_HEAD: Final = re.compile(rb"[$!][A-Z][A-Z0-9]{2,},")
_SENTENCE_START: Final = re.compile(rb"[$!]")
_STAR = 0x2A
_xor = checksums.function("xor")
_ubx = checksums.function("ubx")


def looks_like_sentence(work: bytes, s: int, end: int) -> bool:
    """Can ``work[s:end]`` (a candidate from its ``$``/``!``, without the line ending) be a sentence?
    One with a ``*hh`` field can; one without only when its address field is well formed and no
    other ``$``/``!`` (reserved characters in NMEA 0183) follows in it."""
    if end - s >= 4 and work[end - 3] == _STAR:
        return True
    return (
        _SENTENCE_HEAD.match(work, s, end) is not None
        and work.find(b"$", s + 1, end) < 0
        and work.find(b"!", s + 1, end) < 0
    )


class NmeaRule:
    """NMEA 0183 / AIS sentences inside a mixed stream: ``$``/``!`` to CR/LF, printable ASCII only."""

    __slots__ = ()
    syncs: Final = (b"$", b"!")
    resync_on_bad: Final = True

    def measure(self, work: bytes, s: int, n: int, final: bool) -> int:
        """Up to and including the line ending; REJECT on a non-printable byte or an over-long line."""
        limit = s + NMEA_MAX
        if limit > n:
            limit = n
        m = _NOT_PRINTABLE.search(work, s + 1, limit)
        if m is None:
            return REJECT if limit - s >= NMEA_MAX or final else NEED
        i = m.start()
        c = work[i]
        if c != _LF and c != _CR:
            return REJECT
        if (i - s < 4 or work[i - 3] != 0x2A) and not looks_like_sentence(work, s, i):  # 0x2A: ``*hh``
            return REJECT  # a stray ``$``/``!`` in binary data, e.g. ``$>"`` then a CR byte
        if c == _LF:
            return i + 1 - s
        if i + 1 < n:
            return i + 2 - s if work[i + 1] == _LF else i + 1 - s
        return i + 1 - s if final else NEED

    def frame(self, work: bytes, s: int, e: int, base: int) -> Frame | None:
        """The sentence without its line ending; ``checksum_valid`` from ``*HH`` (None without one)."""
        # measure() ended the frame with exactly LF, CRLF or CR after printable bytes: cut it off
        # without an intermediate copy (the same bytes ``rstrip(b"\r\n")`` would leave).
        end = e - 1 if work[e - 1] == _LF else e
        if work[end - 1] == _CR:
            end -= 1
        line = work[s:end]
        star = line.find(b"*")
        valid: bool | None = None
        if star >= 0:
            if star == len(line) - 3:  # the usual ``*HH`` at the end: XOR the whole line, no body copy
                expected = _LINE_XOR.get(line[star:])
                valid = expected is not None and _xor(line) == expected ^ line[0]
            else:
                given = _CHECKSUM_FIELD.get(line[star + 1 : star + 3])
                valid = given is not None and _xor(line[1:star]) == given
        return Frame(line, base + s, base + e, valid)


class Rtcm3Layout(BinaryLayout):
    """RTCM3 frames: a BinaryLayout that also requires the 6 reserved bits after ``D3`` to be zero."""

    __slots__ = ()

    def measure(self, work: bytes, s: int, n: int, final: bool) -> int:
        """REJECT a ``D3`` whose next byte has reserved bits set (a false sync), else the length
        (BinaryLayout.measure for the 10-bit big-endian field at offset 1, inlined)."""
        if s + 1 < n and work[s + 1] & 0xFC:
            return REJECT
        if s + 3 > n:
            return NEED
        total = ((work[s + 1] << 8 | work[s + 2]) & 0x3FF) + self._len_add
        return REJECT if total < self.min_length or total > self.max_length else total


# Fletcher-8 (UBX) of up to 256 bytes without a Python-level pass over them: zlib's Adler-32 gives
# sum1 exactly and sum2 modulo 65521; the little-endian integer of the bytes modulo 255**2 gives
# sum(i * b_i) and so sum2 modulo 255; the Chinese remainder theorem gives sum2 (< 65521 * 255).
_ADLER_MOD: Final = 65521
_INV_ADLER_MOD_255: Final = pow(_ADLER_MOD % 255, -1, 255)
_UBX_FAST_MAX: Final = 256


def _ubx_checksum_ok(work: bytes, a: int, b: int) -> bool:
    """Do the two bytes at ``work[b:b+2]`` hold the UBX checksum (ck_a, ck_b) of ``work[a:b]``?"""
    n = b - a
    covered = work[a:b]
    if n > _UBX_FAST_MAX:
        value = _ubx(covered)
        return work[b] == value & 0xFF and work[b + 1] == value >> 8
    adler = zlib.adler32(covered)
    sum1 = (adler & 0xFFFF) - 1  # Adler-32 starts at 1
    sum2_adler = ((adler >> 16) - n) % _ADLER_MOD  # ... so its second sum holds n extra ones
    weighted = (int.from_bytes(covered, "little") - sum1) % 65025 // 255  # sum(i * b_i) mod 255
    sum2_255 = (n * sum1 - weighted) % 255
    sum2 = sum2_adler + _ADLER_MOD * ((sum2_255 - sum2_adler) * _INV_ADLER_MOD_255 % 255)
    return work[b] == sum1 & 0xFF and work[b + 1] == sum2 & 0xFF


class UbxLayout(BinaryLayout):
    """The UBX BinaryLayout with its length read and its Fletcher-8 checked faster (same results)."""

    __slots__ = ()

    def measure(self, work: bytes, s: int, n: int, final: bool) -> int:
        """BinaryLayout.measure for the little-endian 16-bit length at offset 4, inlined."""
        if s + 6 > n:
            return NEED
        total = (work[s + 4] | work[s + 5] << 8) + self._len_add
        return REJECT if total < self.min_length or total > self.max_length else total

    def frame(self, work: bytes, s: int, e: int, base: int) -> Frame | None:
        """The whole frame (sync to checksum) with its checksum verdict."""
        return Frame(work[s:e], base + s, base + e, _ubx_checksum_ok(work, s + 2, e - 2))


UBX_LAYOUT: Final = UbxLayout(
    [b"\xb5\x62"],
    LengthField(offset=4, size=2, endianness="little"),
    header_length=6,
    checksum=FrameChecksum("ubx", 2, "little", start=2),
    max_length=8 + UBX_MAX_PAYLOAD,
    include_terminators=True,
)
RTCM3_LAYOUT: Final = Rtcm3Layout(
    [b"\xd3"],
    LengthField(offset=1, size=2, endianness="big", mask=0x3FF),
    header_length=3,
    checksum=FrameChecksum("crc24_lte_a", 3, "big"),
    max_length=3 + 1023 + 3,
    include_terminators=True,
)


class GnssDecoder(ScanDecoder):
    """RX framing ``gnss``: NMEA 0183, UBX and RTCM3 demultiplexed from one stream."""

    __slots__ = ()

    def __init__(self, offset: int = 0) -> None:
        super().__init__([NmeaRule(), UBX_LAYOUT, RTCM3_LAYOUT], offset)


class UbxEncoder:
    """TX framing ``ubx``: ``class id payload`` in, the UBX frame (sync, length, checksum) out."""

    __slots__ = ()

    def encode(self, payload: bytes) -> bytes:
        """See :meth:`BinaryLayout.build`; at least class and id are needed."""
        if len(payload) < 2:
            raise InvalidArgument(messages.UBX_TX_TOO_SHORT.format(length=len(payload)))
        return UBX_LAYOUT.build(payload)


def ubx_decoder(offset: int = 0) -> ScanDecoder:
    """RX framing ``ubx``: UBX frames only (raw frame in ``data``)."""
    return ScanDecoder([UBX_LAYOUT], offset)


def rtcm3_decoder(offset: int = 0) -> ScanDecoder:
    """RX framing ``rtcm3``: RTCM3 frames only (raw frame in ``data``)."""
    return ScanDecoder([RTCM3_LAYOUT], offset)


# --- NMEA lines that resynchronise on $ / ! ---------------------------------------------------------

# Control bytes (other than tab and the line ending) map to 0, everything else to 1; a line that is
# not valid UTF-8 also counts its bytes >= 0x80 as binary (text comments with a degree sign stay text).
_CONTROL: Final = bytes(0 if (b < 0x20 and b not in (0x09, _CR, _LF)) or b == 0x7F else 1 for b in range(256))
_HIGH: Final = bytes(0 if b >= 0x80 else 1 for b in range(256))


def _last_binary(data: bytes) -> int:
    """Index of the last byte of ``data`` that cannot belong to a line of text, or -1."""
    last = data.translate(_CONTROL).rfind(0)
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            last = max(last, data.translate(_HIGH).rfind(0))
    return last


def _plain_text(data: bytes | bytearray) -> bool:
    """ASCII without control bytes other than tab, CR and LF: no line in it needs resyncing."""
    return data.isascii() and data.translate(_CONTROL).find(0) < 0


def _text_lines(work: bytes, done: int) -> bool:
    """Do the complete lines ``work[:done]`` hold no byte :func:`_last_binary` would resync past?"""
    if work.translate(_CONTROL).find(0, 0, done) >= 0:
        return False
    if work.isascii():
        return True
    try:
        work[:done].decode("utf-8")  # an LF never splits a UTF-8 sequence: valid here, valid per line
    except UnicodeDecodeError:
        return False
    return True


def _sentence_start(data: bytes, start: int, end: int) -> int:
    """Index of the first ``$``/``!`` in ``data[start:end]`` that :func:`looks_like_sentence`, or -1."""
    for m in _SENTENCE_START.finditer(data, start, end):
        if looks_like_sentence(data, m.start(), end):
            return m.start()
    return -1


class NmeaLineDecoder(LineDecoder):
    """RX framing ``nmea``: ``auto`` lines, each starting at its sentence after binary garbage."""

    __slots__ = ("_skipped",)

    def __init__(
        self,
        include_terminators: bool = False,
        skip_empty: bool = True,
        offset: int = 0,
        max_length: int = DEFAULT_MAX_LENGTH,
    ) -> None:
        super().__init__("auto", include_terminators, skip_empty, offset, max_length)
        self._skipped = 0

    @property
    def bytes_skipped(self) -> int:
        """Bytes before a sentence's ``$``/``!`` (and binary lines without one) so far."""
        return self._skipped

    def _resync(self, events: list[FrameEvent]) -> list[FrameEvent]:
        out: list[FrameEvent] = []
        for event in events:
            if not isinstance(event, Frame):
                out.append(event)
                continue
            data = event.data
            last_bad = _last_binary(data)
            if last_bad < 0:
                out.append(event)  # printable text: exactly as line framing frames it
                continue
            end = len(data.rstrip(b"\r\n"))
            i = _sentence_start(data, last_bad, end)
            if i < 0:  # binary bytes and no sentence after them (a stray ``$``/``!`` is none)
                self._skipped += event.end - event.start
                continue
            self._skipped += i
            out.append(Frame(data[i:], event.start + i, event.end, event.checksum_valid))
        return out

    def feed(self, data: bytes) -> list[FrameEvent]:
        """Consume ``data``; return the sentences (and errors) it completes."""
        if _plain_text(data) and _plain_text(self._rx.buf):  # the usual case: one check per chunk
            return super().feed(data)
        return self._resync(super().feed(data))

    def flush(self) -> list[FrameEvent]:
        """End of stream: a trailing unterminated line, resynchronised like the others."""
        return self._resync(super().flush())

    def feed_lines(self, data: bytes) -> tuple[list[bytes], int, list[FramingError]] | None:
        """The decode pipeline's fast route through a chunk of plain text (the usual NMEA log).

        Consumes ``data`` and returns the complete lines it ends as raw pieces of an LF split
        (each may end in the CR of its CRLF), the absolute offset of the first, and the framing
        errors after them (the unterminated tail grown past ``max_length``). :meth:`feed` would
        emit ``Frame(line, offset, offset + len(line) + 1)`` for each line, without its CR,
        that is not empty. None, consuming nothing, when the chunk needs :meth:`feed`: binary
        bytes to resynchronise past, a CR that is not a CRLF's, no LF, a line over
        ``max_length``, a state left by an earlier chunk, or non-default options.
        """
        data = as_bytes(data)
        rx = self._rx
        buf = rx.buf
        if (
            self._include
            or not self._skip_empty
            or self._discarding
            or self._skip_lf
            or b"\n" not in data
            or data.count(b"\r") != data.count(b"\r\n")  # also when data ends in CR
        ):
            return None
        # buf, an unterminated tail, holds no CR or LF (without include_terminators): every CR of
        # buf + data starts a CRLF too, and every complete line ends in data
        work = bytes(buf) + data if buf else data
        lines = work.split(b"\n")
        rest = lines.pop()
        done = len(work) - len(rest)
        if not _text_lines(work, done):
            return None
        if done > self.max_length and max(map(len, lines)) > self.max_length:
            return None  # feed() puts its FramingError in place
        start = rx.base
        rx.base = start + done
        buf.clear()
        rx.scan = len(rest)
        events: list[FrameEvent] = []
        if rest:
            buf += rest
            self._check_overflow(events)
        return lines, start, [e for e in events if isinstance(e, FramingError)]
