"""Where a Modbus RTU frame of unknown length may end: every length checked at once, O(1) per byte.

A frame whose function gives no length (user-defined codes, 43) ends at the first length whose
CRC checks. Probing each length with its own CRC costs up to 253 checks per candidate start, and
on noise nearly every byte starts a candidate (80 µs per byte of noise). CRC-16/MODBUS is linear,
which gives each start and each end one 16-bit value such that ``work[s:e]`` checks exactly when
the two are equal; a dictionary from value to ends then answers a start in one look-up.

The algebra: with ``A`` the register step over a zero byte (linear and invertible) and, from an
origin ``r``, ``P(i)`` the zero-init register after ``work[r:i]``, a frame ``[s, e)`` leaves the
CRC register at its residue 0 (init 0xFFFF, CRC appended low byte first) exactly when
``P(e) == A^(e-s) (0xFFFF ^ P(s))``; applying ``A^-(e-r)`` to both sides,
``Q(e) == A^-(s-r) 0xFFFF ^ Q(s)`` with ``Q(i) = A^-(i-r) P(i)``, and ``Q(i+1) = Q(i) ^ A^-(i+1-r) T[b_i]``
(``T`` the CRC table). Origins are the starts of 256-byte blocks, so every start ``s`` of block
``k`` finds its ends (up to 256 bytes on) among the 512 bytes from its block's start, and the
tables ``A^-j T`` for ``j <= 512`` (built once, on first use, in a few milliseconds) are all it needs.
The answers are those of the CRC itself (``tests/unit/test_modbus_rtu.py`` checks them against it).
"""

from __future__ import annotations

from array import array
from itertools import accumulate
from operator import getitem, xor
from typing import Final

BLOCK: Final = 256  # frames are at most 256 bytes, so a start's ends lie within two blocks
_MIN: Final = 4  # the shortest frame: address, function, CRC


def _crc_table() -> list[int]:
    table = []
    for byte in range(256):
        r = byte
        for _ in range(8):
            r = (r >> 1) ^ 0xA001 if r & 1 else r >> 1
        table.append(r)
    return table


_T: Final = _crc_table()
_HIGH_TO_LOW: Final = {t >> 8: low for low, t in enumerate(_T)}  # top bytes of T are all distinct


def _back(y: int) -> int:
    """``A^-1``: the register before a zero byte that left ``y`` (``A(r) = (r >> 8) ^ T[r & 0xFF]``)."""
    low = _HIGH_TO_LOW[y >> 8]
    return ((y ^ _T[low]) & 0xFF) << 8 | low


_tables: tuple[list[array[int]], list[int]] | None = None


def _linear_table(basis: list[int]) -> array[int]:
    """The 256 values of a linear map of a byte, from its values at ``1 << i`` (``basis[i]``)."""
    table = [0]
    for value in basis:
        table += [x ^ value for x in table]
    return array("H", table)


def _build() -> tuple[list[array[int]], list[int]]:
    """``U[j][b] = A^-j T[b]`` for ``j`` in 0..2*BLOCK, and ``C[j] = A^-j 0xFFFF`` for ``j`` < BLOCK
    (both maps are linear: eight values per ``j`` give the whole table)."""
    global _tables
    if _tables is None:
        basis = [_T[1 << i] for i in range(8)]
        u = [_linear_table(basis)]
        for _ in range(2 * BLOCK):
            basis = [_back(v) for v in basis]
            u.append(_linear_table(basis))
        c = [0xFFFF]
        for _ in range(BLOCK - 1):
            c.append(_back(c[-1]))
        _tables = (u, c)
    return _tables


class EndIndex:
    """The checking frame ends of one ``work`` string, block by block as asked for."""

    __slots__ = ("_blocks", "_c", "_u", "work")

    def __init__(self, work: bytes) -> None:
        self.work = work
        self._u, self._c = _build()
        self._blocks: dict[int, list[int]] = {}

    def _block(self, k: int) -> list[int]:
        """``Q(ref + i)`` for ``i`` in ``0 .. 2 * BLOCK`` (as far as ``work`` goes), in C-level loops."""
        qs = self._blocks.get(k)
        if qs is None:
            ref = k * BLOCK
            data = self.work[ref : ref + 2 * BLOCK]
            qs = list(accumulate(map(getitem, self._u[1 : len(data) + 1], data), xor, initial=0))
            self._blocks[k] = qs
        return qs

    def first_end(self, s: int, lo: int, hi: int) -> int | None:
        """The smallest ``e`` in ``[lo, hi]`` (``s + 4 <= lo``, ``hi <= s + 256``) where
        ``work[s:e]`` checks, or None."""
        k, i = divmod(s, BLOCK)
        ref = s - i
        qs = self._block(k)
        try:
            return ref + qs.index(self._c[i] ^ qs[i], lo - ref, hi - ref + 1)
        except ValueError:
            return None
