"""Checksums and CRCs of a byte string: simple sums, Fletcher/Adler and the whole CRC catalogue.

Sans-IO and pure: ``compute(algorithm, data)`` returns an ``int``; nothing here reads a
port, a file or a clock. Names are forgiving because they come from people and agents:
case is ignored, ``-``, ``/``, ``_`` and spaces are interchangeable (or may be left
out), so ``CRC-16/MODBUS``, ``crc16_modbus`` and ``crc-16 modbus`` are one algorithm,
and former catalogue names (``CRC-16/CCITT-FALSE``, ``X-25``, ``CRC-32C``) still work.
An unknown name raises :class:`~serial_mcp.errors.InvalidArgument` naming the closest
valid ones.

CRCs run on one generic Rocksoft/Williams engine (width, poly, init, refin, refout,
xorout) with a 256-entry table per model, built on first use and cached. Models on the
CRC-32 polynomial take ``zlib.crc32`` and those on the CCITT polynomial take
``binascii.crc_hqx`` (C speed); the opposite bit order is handled by bit-reversing
the input bytes with ``bytes.translate``. Every other model up to 64 bits runs on the
``anycrc`` C extension when it is installed and reproduces the model's check value
(it is verified once per model), else on the table.

Simple checksums (results as unsigned integers):

* ``xor`` / ``xor16`` / ``xor32`` - XOR of bytes / big-endian 16- / 32-bit words;
* ``sum8`` / ``sum16`` / ``sum32`` - sum of bytes / big-endian words, truncated;
* ``lrc`` - Modbus ASCII LRC, the two's complement of the 8-bit byte sum;
* ``fletcher16`` (bytes mod 255), ``fletcher32`` / ``fletcher64`` (little-endian 16-/32-bit
  words mod 2**16-1 / 2**32-1), result ``(sum2 << n) | sum1``, sums start at 0;
* ``ubx`` (alias ``fletcher8``) - u-blox UBX's 8-bit Fletcher: bytes mod 256, result
  ``(ck_b << 8) | ck_a``, so ``endianness: little`` puts CK_A first as on the wire;
* ``adler32`` - as ``zlib.adler32``.

Word-based sums zero-pad a trailing partial word.
"""

from __future__ import annotations

import binascii
import difflib
import functools
import re
import struct
import zlib
from collections.abc import Callable
from itertools import accumulate
from typing import Final

from serial_mcp import messages
from serial_mcp.core.crc_catalogue import MODELS, OLD_NAMES, CrcModel
from serial_mcp.errors import InvalidArgument

BytesLike = bytes | bytearray | memoryview

# --- simple checksums ----------------------------------------------------------------------------


def _padded(data: bytes | bytearray, word: int) -> bytes | bytearray:
    """``data`` zero-padded to a whole number of ``word``-byte words."""
    pad = -len(data) % word
    return data + bytes(pad) if pad else data


def _xor_fold(data: bytes | bytearray, word: int) -> int:
    """XOR of the big-endian ``word``-byte words of ``data``, by halving one big integer.

    Each round XORs the upper half of the remaining words onto the lower half, so the
    work is a few C-level passes instead of a Python loop per byte.
    """
    data = _padded(data, word)
    count = len(data) // word
    value = int.from_bytes(data, "big")
    word_bits = 8 * word
    word_mask = (1 << word_bits) - 1
    acc = 0
    while count > 1:
        if count & 1:
            acc ^= value & word_mask
            value >>= word_bits
            count -= 1
        count //= 2
        shift = word_bits * count
        value = (value >> shift) ^ (value & ((1 << shift) - 1))
    return value ^ acc


def _words(data: bytes | bytearray, word: int, order: str) -> tuple[int, ...]:
    """Unsigned ``word``-byte words of zero-padded ``data`` in byte order ``order`` ('<' or '>')."""
    data = _padded(data, word)
    code = "H" if word == 2 else "I"
    return struct.unpack(f"{order}{len(data) // word}{code}", data)


def _xor8_fold(data: bytes | bytearray) -> int:
    return _xor_fold(data, 1)


def _xor8_engine() -> Callable[[bytes | bytearray], int]:
    """XOR of bytes at C speed: it is the CRC with generator x^8 + 1 (x^8 = 1, so every byte
    is added unshifted), which ``anycrc`` runs; the fold is the fallback."""
    try:
        import anycrc  # type: ignore[import-untyped]  # optional C extension (a dependency)
    except ImportError:  # pragma: no cover
        return _xor8_fold
    calc: Callable[[bytes | bytearray], int] = anycrc.CRC(
        width=8, poly=0x01, init=0, refin=False, refout=False, xorout=0
    ).calc
    return calc if calc(b"\x01\x02\x04\x80") == 0x87 and calc(b"") == 0 else _xor8_fold


_xor8 = _xor8_engine()


def _fletcher(values: bytes | bytearray | tuple[int, ...], modulus: int, bits: int) -> int:
    """Fletcher sums: sum1 is the plain sum, sum2 the sum of running sums (reduced once at the end)."""
    sum1 = sum(values) % modulus
    sum2 = sum(accumulate(values)) % modulus
    return (sum2 << bits) | sum1


_Func = Callable[[bytes | bytearray], int]

# canonical name -> (function, width in bytes)
_SIMPLE: Final[dict[str, tuple[_Func, int]]] = {
    "xor": (_xor8, 1),
    "xor16": (lambda d: _xor_fold(d, 2), 2),
    "xor32": (lambda d: _xor_fold(d, 4), 4),
    "sum8": (lambda d: sum(d) & 0xFF, 1),
    "sum16": (lambda d: sum(_words(d, 2, ">")) & 0xFFFF, 2),
    "sum32": (lambda d: sum(_words(d, 4, ">")) & 0xFFFFFFFF, 4),
    "lrc": (lambda d: -sum(d) & 0xFF, 1),
    "fletcher16": (lambda d: _fletcher(d, 255, 8), 2),
    "fletcher32": (lambda d: _fletcher(_words(d, 2, "<"), 0xFFFF, 16), 4),
    "fletcher64": (lambda d: _fletcher(_words(d, 4, "<"), 0xFFFFFFFF, 32), 8),
    "adler32": (lambda d: zlib.adler32(d) & 0xFFFFFFFF, 4),
    "ubx": (lambda d: _fletcher(d, 256, 8), 2),
}
_SIMPLE_ALIASES: Final[dict[str, str]] = {"xor8": "xor", "fletcher8": "ubx"}
# Common spellings beyond the catalogue's own former names (OLD_NAMES).
_CRC_ALIASES: Final[dict[str, str]] = {"crc16_x25": "CRC-16/IBM-SDLC"}

# --- CRC engine ----------------------------------------------------------------------------------

_REV8: Final[bytes] = bytes(int(f"{i:08b}"[::-1], 2) for i in range(256))


def _reflect(value: int, width: int) -> int:
    """``value`` with its low ``width`` bits in reverse order."""
    return int(f"{value:0{width}b}"[::-1], 2)


@functools.cache
def _table(model: CrcModel) -> tuple[int, ...]:
    """The 256-entry byte table of ``model`` (reflected or MSB-first), built once per model.

    MSB-first models narrower than 8 bits run on a register widened to 8 bits (poly and
    init shifted up), so one table shape serves every width.
    """
    table = []
    if model.refin:
        rpoly = _reflect(model.poly, model.width)
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ rpoly if c & 1 else c >> 1
            table.append(c)
    else:
        bits = max(model.width, 8)
        poly = model.poly << (bits - model.width)
        top = 1 << (bits - 1)
        mask = (1 << bits) - 1
        for i in range(256):
            c = i << (bits - 8)
            for _ in range(8):
                c = ((c << 1) ^ poly) & mask if c & top else (c << 1) & mask
            table.append(c)
    return tuple(table)


def _finish(model: CrcModel, register: int, reflected: bool) -> int:
    """Apply refout and xorout to a final register held reflected or MSB-first."""
    if reflected != model.refout:
        register = _reflect(register, model.width)
    return register ^ model.xorout


def _crc_table(model: CrcModel, data: bytes | bytearray) -> int:
    """Generic table-driven CRC of ``data`` under ``model`` (any width, any orientation)."""
    table = _table(model)
    width = model.width
    if width <= 8:  # the register fits in the index byte: nothing is carried between steps
        crc = _reflect(model.init, width) if model.refin else model.init << (8 - width)
        for b in data:
            crc = table[crc ^ b]
        return _finish(model, crc if model.refin else crc >> (8 - width), reflected=model.refin)
    if model.refin:
        crc = _reflect(model.init, width)
        for b in data:
            crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
        return _finish(model, crc, reflected=True)
    bits = max(width, 8)
    pad = bits - width
    shift = bits - 8
    mask = (1 << bits) - 1
    crc = model.init << pad
    for b in data:
        crc = table[(crc >> shift) ^ b] ^ ((crc << 8) & mask)
    return _finish(model, crc >> pad, reflected=False)


def _zlib_path(model: CrcModel) -> _Func:
    """CRC on the CRC-32 polynomial via ``zlib.crc32`` (a reflected engine).

    zlib keeps ``value ^ 0xFFFFFFFF`` in its register, so an arbitrary init is passed as
    ``reflect(init) ^ 0xFFFFFFFF``; MSB-first models feed bit-reversed bytes, which
    yields the reflected register of the MSB-first computation.
    """
    start = _reflect(model.init, 32) ^ 0xFFFFFFFF
    refin = model.refin

    def run(data: bytes | bytearray) -> int:
        register = zlib.crc32(data if refin else data.translate(_REV8), start) ^ 0xFFFFFFFF
        return _finish(model, register, reflected=True)

    return run


def _hqx_path(model: CrcModel) -> _Func:
    """CRC on the CCITT polynomial 0x1021 via ``binascii.crc_hqx`` (an MSB-first engine)."""
    init = model.init
    refin = model.refin

    def run(data: bytes | bytearray) -> int:
        register = binascii.crc_hqx(data.translate(_REV8) if refin else data, init)
        return _finish(model, register, reflected=False)

    return run


def _anycrc_path(model: CrcModel) -> _Func | None:
    """The model on the ``anycrc`` C extension, if it is installed and gets the check value right."""
    if model.width > 64:
        return None
    try:
        import anycrc  # optional C extension (a dependency)
    except ImportError:  # pragma: no cover - the pure table stays correct, only slower
        return None
    calc: _Func = anycrc.CRC(*model[1:7]).calc  # width, poly, init, refin, refout, xorout: the same order
    if calc(b"123456789") != model.check or calc(b"") != _crc_table(model, b""):
        return None
    return calc


@functools.cache
def _engine(model: CrcModel) -> _Func:
    """The fastest exact implementation for ``model``: a C path when one matches, else the table."""
    if model.width == 32 and model.poly == 0x04C11DB7:
        return _zlib_path(model)
    if model.width == 16 and model.poly == 0x1021:
        return _hqx_path(model)
    return _anycrc_path(model) or functools.partial(_crc_table, model)


# --- names ---------------------------------------------------------------------------------------

_CRC: Final[dict[str, CrcModel]] = {}
_LOOKUP: Final[dict[str, str]] = {}  # separator-free lower-case key -> canonical name
_SPELLING: Final[dict[str, str]] = {}  # key -> readable spelling offered in suggestions
_SEPARATORS: Final[dict[int, int | None]] = str.maketrans("", "", "-/_ ")
# The algorithms listed in TOOLS.md: used as examples and ranked first in hints.
_COMMON: Final[tuple[str, ...]] = (
    "xor", "lrc", "sum8", "crc8", "crc16_modbus", "crc16_ccitt_false", "crc16_xmodem",
    "crc16_kermit", "crc32", "fletcher16",
)  # fmt: skip


def _key(name: str) -> str:
    """Lookup key: lower case with separators removed (``CRC-16/MODBUS`` -> ``crc16modbus``)."""
    return name.strip().lower().translate(_SEPARATORS)


def _snake(name: str) -> str:
    """Snake-case spelling of a catalogue name (``CRC-16/IBM-3740`` -> ``crc16_ibm_3740``)."""
    name = re.sub(r"^crc-(?=\d)", "crc", name.strip().lower())
    return re.sub(r"[-/ ]+", "_", name)


def _register(key_source: str, canonical: str, spelling: str) -> None:
    key = _key(key_source)
    if _LOOKUP.setdefault(key, canonical) != canonical:  # guards the generated data
        raise RuntimeError(f"checksum name {key_source!r} maps to two algorithms")
    _SPELLING.setdefault(key, spelling)


for _name in _SIMPLE:
    _register(_name, _name, _name)
for _model in MODELS:
    _CRC[_snake(_model.name)] = _model
    _register(_model.name, _snake(_model.name), _snake(_model.name))
for _old, _new in OLD_NAMES.items():
    _register(_old, _snake(_new), _snake(_old))
for _alias, _target in _SIMPLE_ALIASES.items():
    _register(_alias, _target, _alias)
for _alias, _new in _CRC_ALIASES.items():
    _register(_alias, _snake(_new), _alias)
del _name, _model, _old, _new, _alias, _target

_ALGORITHMS: Final[tuple[str, ...]] = tuple(sorted([*_SIMPLE, *_CRC]))


def _crc_width(spelling: str) -> int | None:
    """Width of the CRC a known spelling resolves to (``None`` for simple checksums)."""
    model = _CRC.get(_LOOKUP.get(_key(spelling), ""))
    return model.width if model else None


def _unknown(algorithm: str) -> InvalidArgument:
    """The error for an unknown name, naming the closest valid spellings.

    A bare width such as ``crc16`` matches dozens of models, so it is reported as
    ambiguous with the common choices first rather than as a typo.
    """
    key = _key(algorithm)
    match = re.fullmatch(r"crc(\d+)", key)
    width = int(match.group(1)) if match else None
    same_width = sorted(n for n, m in _CRC.items() if m.width == width)
    if len(same_width) > 1:
        common = [n for n in _COMMON if _crc_width(n) == width]
        ranked = [*common, *(n for n in same_width if n not in common)]
        shown = ", ".join(ranked[:6])
        if len(ranked) > 6:
            shown += messages.CHECKSUM_AND_MORE.format(count=len(ranked) - 6)
        return InvalidArgument(
            messages.CHECKSUM_AMBIGUOUS.format(name=algorithm, count=len(same_width), examples=shown),
            algorithm=algorithm,
            suggestions=ranked[:6],
        )
    close = difflib.get_close_matches(key, _SPELLING, n=6, cutoff=0.6)
    suggestions = list(dict.fromkeys([*same_width, *(_SPELLING[k] for k in close)]))[:4]
    if suggestions:
        text = messages.CHECKSUM_UNKNOWN.format(name=algorithm, suggestions=", ".join(suggestions))
    else:
        text = messages.CHECKSUM_UNKNOWN_NO_MATCH.format(
            name=algorithm, examples=", ".join(_COMMON), count=len(_ALGORITHMS)
        )
    return InvalidArgument(text, algorithm=algorithm, suggestions=suggestions)


# --- public API ----------------------------------------------------------------------------------


def canonical_name(algorithm: str) -> str:
    """The canonical (snake-case) name of ``algorithm``, e.g. ``CRC-16/CCITT-FALSE`` -> ``crc16_ibm_3740``.

    Case, ``-``/``/``/``_``/space and former catalogue names are all accepted.
    Raises InvalidArgument naming the closest valid names when it is unknown.
    """
    if not isinstance(algorithm, str):
        raise InvalidArgument(messages.CHECKSUM_NOT_A_NAME.format(type=type(algorithm).__name__))
    canonical = _LOOKUP.get(_key(algorithm))
    if canonical is None:
        raise _unknown(algorithm)
    return canonical


def algorithms() -> list[str]:
    """Every canonical algorithm name, sorted (simple checksums and all catalogue CRCs)."""
    return list(_ALGORITHMS)


def width_bytes(algorithm: str) -> int:
    """Size of the checksum value in bytes (``xor`` 1, ``crc16_modbus`` 2, ``CRC-82/DARC`` 11)."""
    name = canonical_name(algorithm)
    simple = _SIMPLE.get(name)
    return simple[1] if simple else (_CRC[name].width + 7) // 8


def crc_model(algorithm: str) -> CrcModel | None:
    """The catalogue parameters of a CRC algorithm (``None`` for simple checksums)."""
    return _CRC.get(canonical_name(algorithm))


def compute(algorithm: str, data: BytesLike) -> int:
    """The checksum of ``data`` under ``algorithm``, as an unsigned integer."""
    name = canonical_name(algorithm)
    if isinstance(data, memoryview):
        data = data.tobytes()
    simple = _SIMPLE.get(name)
    if simple:
        return simple[0](data)
    return _engine(_CRC[name])(data)


def function(algorithm: str) -> Callable[[bytes | bytearray], int]:
    """The checksum function of ``algorithm`` itself (name resolved once, for per-frame use)."""
    name = canonical_name(algorithm)
    simple = _SIMPLE.get(name)
    return simple[0] if simple else _engine(_CRC[name])
