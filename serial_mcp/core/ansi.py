"""Strip ANSI/VT100 escape sequences from a byte stream (sans-IO, chunking-invariant).

Consoles colour their logs (``ESC[0;32mI (568) cpu_start: ...ESC[0m``), hide the cursor
(``ESC[?25l``), query it (``ESC[6n``) and set window titles (``ESC]0;title BEL``). An agent
reading text wants none of that, but it wants every visible character untouched, so the
stripper follows the ECMA-48 grammar (as in xterm's ctlseqs and the VT500 parser model)
rather than a loose regex:

* CSI ``ESC [`` parameter bytes ``0x30-0x3F``, intermediate bytes ``0x20-0x2F``, one final
  byte ``0x40-0x7E`` (SGR colours, cursor moves, private modes such as ``ESC[?25l``);
* OSC ``ESC ]`` and the other control strings (DCS ``ESC P``, SOS ``ESC X``, PM ``ESC ^``,
  APC ``ESC _``) up to BEL or ST (``ESC \\``);
* nF escapes ``ESC`` intermediates final (``ESC ( B``, ``ESC # 8``) and two-byte escapes
  ``ESC`` + ``0x30-0x7E`` (``ESC 7``, ``ESC M``, ``ESC c``).

Damaged input is handled by one rule: a byte that cannot continue the sequence in progress
ends it (the part seen so far is dropped and counted) and is then read as ordinary input,
so a stray ``ESC`` never swallows the text behind it, ``ESC ESC [m`` loses both escapes,
and no ``ESC`` byte survives. Control strings also end at CR, LF, CAN or SUB (a title never
spans lines, so a stray ``ESC ]`` costs at most one line) and all sequences have a length
cap, so memory stays bounded.

8-bit C1 introducers (``0x9B`` CSI, ``0x9D`` OSC ...) are *not* recognised by default:
in UTF-8 text those bytes are continuation bytes (``ě`` is ``C4 9B``), and removing them
would corrupt characters. Pass ``c1=True`` only for 8-bit (non-UTF-8) terminals.

The stripper is a byte-driven state machine, so a sequence torn across chunks is removed
whole and any chunking of a stream gives exactly the output of stripping it at once.
Ordinary text between sequences is copied in slices, so long plain runs cost little.
"""

from __future__ import annotations

import re
from typing import Final

#: Longest CSI (introducer included) before it is treated as damaged and ended.
MAX_CSI_LENGTH: Final = 256
#: Longest control string (OSC, DCS ...) before it is treated as damaged and ended.
MAX_STRING_LENGTH: Final = 4096

_ESC: Final = 0x1B
_BEL: Final = 0x07
_ST_FINAL: Final = 0x5C  # the "\" of ST (ESC \)
_C1_ST: Final = 0x9C
_STRING_ENDERS: Final = frozenset({0x0A, 0x0D, 0x18, 0x1A})  # LF, CR, CAN, SUB: abort the string
_STRING_INTRODUCERS: Final = frozenset(b"]PX^_")
_C1_CSI: Final = 0x9B
_C1_STRINGS: Final = frozenset({0x90, 0x98, 0x9D, 0x9E, 0x9F})  # DCS, SOS, OSC, PM, APC

_ANY_ESC: Final = re.compile(rb"\x1b")
_ANY_ESC_OR_C1: Final = re.compile(rb"[\x1b\x90\x98\x9b\x9d\x9e\x9f]")

# States of the machine (ints, for speed in the per-byte loop).
_GROUND, _ESCAPE, _NF, _CSI_PARAM, _CSI_INTER, _STRING, _STRING_ESC = range(7)


class AnsiStripper:
    """Incremental stripper: ``feed`` chunks, get the visible bytes and a count back.

    ``removed`` is the running total of sequences removed (a sequence counts once, in the
    chunk where it starts, whether it completes or is ended early as damaged).
    """

    __slots__ = ("_c1", "_finder", "_length", "_state", "removed")

    def __init__(self, *, c1: bool = False) -> None:
        self._c1 = c1
        self._finder = _ANY_ESC_OR_C1 if c1 else _ANY_ESC
        self._state = _GROUND
        self._length = 0
        self.removed = 0

    @property
    def in_sequence(self) -> bool:
        """True when the bytes fed so far end inside an unfinished escape sequence."""
        return self._state != _GROUND

    def feed(self, data: bytes) -> tuple[bytes, int]:
        """Strip ``data``; returns the visible bytes and the sequences removed in this chunk."""
        out = bytearray()
        before = self.removed
        i = 0
        n = len(data)
        while i < n:
            if self._state == _GROUND:
                match = self._finder.search(data, i)
                if match is None:
                    out += data[i:]
                    break
                j = match.start()
                out += data[i:j]
                self.removed += 1
                self._begin(data[j])
                i = j + 1
                continue
            byte = data[i]
            if self._step(byte):
                i += 1
            else:  # the byte ended the sequence without belonging to it: read it again as input
                self._state = _GROUND
        return bytes(out), self.removed - before

    def flush(self) -> tuple[bytes, int]:
        """End of stream: forget an unfinished sequence (already dropped); nothing to emit."""
        self._state = _GROUND
        self._length = 0
        return b"", 0

    # --- the state machine -------------------------------------------------------------------

    def _begin(self, byte: int) -> None:
        """Enter the state for an introducer byte (ESC, or a C1 introducer with ``c1``)."""
        self._length = 1
        if byte == _ESC:
            self._state = _ESCAPE
        elif byte == _C1_CSI:
            self._state = _CSI_PARAM
        else:
            self._state = _STRING

    def _step(self, byte: int) -> bool:
        """Advance on one byte; False means the byte ends the sequence and is not part of it."""
        self._length += 1
        state = self._state
        if state == _ESCAPE:
            if byte == 0x5B:  # [
                self._state = _CSI_PARAM
            elif byte in _STRING_INTRODUCERS:
                self._state = _STRING
            elif 0x20 <= byte <= 0x2F:
                self._state = _NF
            elif 0x30 <= byte <= 0x7E:
                self._state = _GROUND
            else:
                return False
            return True
        if state in (_CSI_PARAM, _CSI_INTER):
            if self._length > MAX_CSI_LENGTH:
                return False
            if state == _CSI_PARAM and 0x30 <= byte <= 0x3F:
                return True
            if 0x20 <= byte <= 0x2F:
                self._state = _CSI_INTER
                return True
            if 0x40 <= byte <= 0x7E:
                self._state = _GROUND
                return True
            return False
        if state == _NF:
            if 0x20 <= byte <= 0x2F and self._length <= MAX_CSI_LENGTH:
                return True
            if 0x30 <= byte <= 0x7E:
                self._state = _GROUND
                return True
            return False
        if state == _STRING:
            if self._length > MAX_STRING_LENGTH or byte in _STRING_ENDERS:
                return False
            if byte == _BEL or (self._c1 and byte == _C1_ST):
                self._state = _GROUND
            elif byte == _ESC:
                self._state = _STRING_ESC
            return True
        # _STRING_ESC: ST completes the string; anything else ends it and the ESC was a new
        # escape (already consumed), so continue as if that ESC had just been seen.
        if byte == _ST_FINAL:
            self._state = _GROUND
            return True
        self.removed += 1  # the ESC began a sequence of its own
        self._state = _ESCAPE
        self._length = 1
        return self._step(byte)


def strip_ansi(data: bytes, *, c1: bool = False) -> tuple[bytes, int]:
    """``data`` without ANSI/VT100 escape sequences, and how many sequences were removed."""
    return AnsiStripper(c1=c1).feed(data)
