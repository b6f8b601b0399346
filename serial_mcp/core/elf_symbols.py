"""Code addresses to ``function at file:line`` from a firmware ELF, with pyelftools (no cross toolchain).

``ElfSymbols.parse(data)`` reads an ELF image held in memory; ``lookup(address)`` answers what
``addr2line -f -i`` answers: a list of :class:`Frame`, innermost first. When the address lies in code inlined
at ``-O2``, the first frames are the inlined functions (``inlined=True``), each with the line the address is
on, then the call site in the function it was inlined into; the last frame is the real (out-of-line)
function. Lines come from the DWARF line program, functions and inline chains from ``DW_TAG_subprogram`` /
``DW_TAG_inlined_subroutine`` and their ranges. An address no DWARF covers falls back to the symbol table
(function only, no file or line).

Bounded: an image over ``MAX_ELF_BYTES`` is refused before parsing, and so is one whose compressed
debug sections (``SHF_COMPRESSED``'s ``ch_size``, a ``.zdebug_*`` section's ``ZLIB`` header) claim more
than ``MAX_INFLATED_BYTES`` in all, judged from the section headers before anything is inflated; a
``.zdebug_*`` section is then inflated in pieces, never past its claim (pyelftools inflates it whole
before it compares). Whatever pyelftools raises on a damaged image is ``invalid_argument`` with the
reason, and whatever it raises in a lookup falls back to the symbol table. ``parse`` reads only the
compile units' top-level ranges; a unit's functions and line table are read the first time an address
in it is looked up, and kept. pyelftools is slow (about a second per MB of DWARF): callers parse off the
event loop and cache.
"""

from __future__ import annotations

import bisect
import io
import logging
import posixpath
import struct
import traceback
import zlib
from dataclasses import dataclass
from typing import Any, Final

from elftools.dwarf.compileunit import CompileUnit
from elftools.dwarf.die import DIE
from elftools.dwarf.dwarfinfo import DebugSectionDescriptor, DWARFInfo
from elftools.dwarf.ranges import BaseAddressEntry
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from serial_mcp import messages
from serial_mcp.errors import ErrorCode, InvalidArgument, LimitReached, SerialMcpError

log = logging.getLogger(__name__)

MAX_ELF_BYTES: Final = 64 << 20
MAX_INFLATED_BYTES: Final = 256 << 20  # claimed decompressed sizes of all compressed sections together
_INFLATE_PIECE: Final = 1 << 20  # compressed bytes handed to zlib at once
# sections whose contents pyelftools reads for DWARF (a NOBITS one is made of zeros of its claimed size)
_DEBUG_PREFIXES: Final = (".debug_", ".zdebug_", ".eh_frame", ".gnu_debugaltlink")
MAX_INLINE_DEPTH: Final = 64  # nested inlined subroutines followed at most
_SCOPES: Final = frozenset({"DW_TAG_lexical_block", "DW_TAG_try_block", "DW_TAG_catch_block"})


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame of an address: the function, and the file and line (None when unknown)."""

    address: int
    function: str | None
    file: str | None
    line: int | None
    inlined: bool = False

    def __str__(self) -> str:
        where = f" at {self.file}:{self.line}" if self.file is not None and self.line else ""
        inl = " (inlined)" if self.inlined else ""
        return f"{self.function or '??'}{where}{inl}"


class _Unit:
    """One compile unit: its ranges, and (once looked into) its functions and line rows."""

    __slots__ = ("cu", "files", "functions", "lines", "rows", "starts")

    def __init__(self, cu: CompileUnit) -> None:
        self.cu = cu
        self.functions: list[tuple[int, int, DIE]] | None = None  # (low, high, subprogram), by low
        self.starts: list[int] = []
        self.rows: list[tuple[int, int, int, int]] = []  # (address, not end_sequence, file, line)
        self.lines: list[int] = []  # the rows' addresses, for bisect
        self.files: list[str | None] = []  # path by the line program's file index


class ElfSymbols:
    """Address lookups in one ELF image; see the module docstring."""

    def __init__(self, elf: ELFFile) -> None:
        self._elf = elf
        self._thumb = elf["e_machine"] == "EM_ARM"
        dwarf = elf.get_dwarf_info() if elf.has_dwarf_info() else None
        # has_dwarf_info() is true for .eh_frame alone: only .debug_info says functions, files and lines
        self._dwarf: DWARFInfo | None = dwarf if dwarf is not None and dwarf.has_debug_info else None
        self._units: list[tuple[int, int, _Unit]] = []  # (low, high, unit), by low
        if self._dwarf is not None:
            for cu in self._dwarf.iter_CUs():
                unit = _Unit(cu)
                top = cu.get_top_DIE()
                for low, high in self._ranges(top, cu, self._base(top)):
                    if high > low:
                        self._units.append((low, high, unit))
            self._units.sort(key=lambda u: u[0])
        self._unit_starts = [u[0] for u in self._units]
        self._symbols: list[tuple[int, int, str]] = []  # (address, size, name) of functions, by address
        for section in elf.iter_sections():
            if isinstance(section, SymbolTableSection):
                for sym in section.iter_symbols():
                    if sym["st_info"]["type"] == "STT_FUNC" and sym.name and sym["st_value"]:
                        value = sym["st_value"] & ~1 if self._thumb else sym["st_value"]
                        self._symbols.append((value, sym["st_size"], sym.name))
        self._symbols.sort()
        self._symbol_starts = [s[0] for s in self._symbols]

    @classmethod
    def parse(cls, data: bytes) -> ElfSymbols:
        """Read an ELF image. Raises ``resource_limit`` over ``MAX_ELF_BYTES``, ``invalid_argument`` when it
        is not an ELF pyelftools can read."""
        if len(data) > MAX_ELF_BYTES:
            raise LimitReached(
                ErrorCode.RESOURCE_LIMIT, messages.ELF_TOO_LARGE.format(size=len(data), max=MAX_ELF_BYTES)
            )
        if not data.startswith(b"\x7fELF"):
            raise InvalidArgument(messages.ELF_NOT_ELF.format(start=data[:4]))
        try:
            elf = _BoundedELFFile(io.BytesIO(data))
            _check_claims(elf, len(data))
            return cls(elf)
        except SerialMcpError:
            raise
        except MemoryError:
            raise LimitReached(ErrorCode.RESOURCE_LIMIT, messages.ELF_OUT_OF_MEMORY) from None
        except Exception as exc:  # pyelftools on a damaged image: asserts, struct errors, ...
            raise InvalidArgument(messages.ELF_UNREADABLE.format(error=_reason(exc))) from None

    @property
    def has_dwarf(self) -> bool:
        """Whether the image has DWARF debug information (else lookups give function names at most)."""
        return self._dwarf is not None

    def lookup(self, address: int) -> list[Frame]:
        """The frames of ``address``, innermost first; ``[]`` when nothing in the image covers it."""
        try:
            frames = self._from_dwarf(address)
        except Exception as exc:  # a damaged unit (pyelftools asserts too): the symbol table
            log.debug("DWARF lookup of 0x%x failed: %s", address, _reason(exc))
            frames = []
        if frames:
            return frames
        i = bisect.bisect_right(self._symbol_starts, address) - 1
        if i >= 0:
            start, size, name = self._symbols[i]
            if address < start + max(size, 1):
                return [Frame(address, name, None, None)]
        return []

    # --- DWARF ---------------------------------------------------------------------------------------------

    def _from_dwarf(self, address: int) -> list[Frame]:
        for k in range(bisect.bisect_right(self._unit_starts, address) - 1, -1, -1):
            low, high, unit = self._units[k]
            if low <= address < high:
                frames = self._in_unit(unit, address)
                if frames:
                    return frames
        return []

    def _in_unit(self, unit: _Unit, address: int) -> list[Frame]:
        if unit.functions is None:
            self._load(unit)
        assert unit.functions is not None
        file, line = self._line(unit, address)
        k = bisect.bisect_right(unit.starts, address) - 1
        subprogram: DIE | None = None
        while k >= 0:
            low, high, die = unit.functions[k]
            if low <= address < high:
                subprogram = die
                break
            k -= 1
        if subprogram is None:
            return []
        chain = self._inline_chain(subprogram, address, unit)
        frames: list[Frame] = []
        for depth in range(len(chain) - 1, -1, -1):
            die = chain[depth]
            frames.append(Frame(address, self._name(die), file, line, inlined=depth > 0))
            if depth > 0:  # the next frame out is at this inline's call site
                file = self._file(unit, self._int(die, "DW_AT_call_file"))
                line = self._int(die, "DW_AT_call_line")
        return frames

    def _inline_chain(self, subprogram: DIE, address: int, unit: _Unit) -> list[DIE]:
        """``[subprogram, outermost inline, ..., innermost inline]`` around ``address``."""
        base = self._base(unit.cu.get_top_DIE())
        chain = [subprogram]
        scope = subprogram
        while len(chain) <= MAX_INLINE_DEPTH:
            found = self._inline_in(scope, address, unit.cu, base)
            if found is None:
                break
            chain.append(found)
            scope = found
        return chain

    def _inline_in(self, scope: DIE, address: int, cu: CompileUnit, base: int) -> DIE | None:
        """The inlined subroutine directly in ``scope`` (through lexical blocks) that covers ``address``."""
        stack = list(scope.iter_children())
        while stack:
            die = stack.pop()
            if die.tag == "DW_TAG_inlined_subroutine":
                if any(lo <= address < hi for lo, hi in self._ranges(die, cu, base)):
                    return die
            elif die.tag in _SCOPES:
                ranges = self._ranges(die, cu, base)
                if not ranges or any(lo <= address < hi for lo, hi in ranges):
                    stack.extend(die.iter_children())
        return None

    def _load(self, unit: _Unit) -> None:
        cu = unit.cu
        base = self._base(cu.get_top_DIE())
        functions: list[tuple[int, int, DIE]] = []
        for die in cu.iter_DIEs():
            if die.tag == "DW_TAG_subprogram":
                for low, high in self._ranges(die, cu, base):
                    if high > low:
                        functions.append((low, high, die))
        functions.sort(key=lambda f: (f[0], -f[1]))
        unit.functions = functions
        unit.starts = [f[0] for f in functions]
        assert self._dwarf is not None
        program = self._dwarf.line_program_for_CU(cu)
        if program is None:
            return
        version = program.header["version"]
        top = cu.get_top_DIE()
        comp_dir = self._text(top, "DW_AT_comp_dir") or ""
        dirs = [
            d.decode("utf-8", "replace") if isinstance(d, bytes) else str(d)
            for d in program.header["include_directory"]
        ]
        files: list[str | None] = [] if version >= 5 else [None]  # DWARF < 5 numbers files from 1
        for entry in program.header["file_entry"]:
            name = entry.name.decode("utf-8", "replace") if isinstance(entry.name, bytes) else str(entry.name)
            index = entry.dir_index
            if version >= 5:
                directory = dirs[index] if index < len(dirs) else ""
            else:
                directory = comp_dir if index == 0 else (dirs[index - 1] if index - 1 < len(dirs) else "")
            path = posixpath.join(directory, name)
            if not posixpath.isabs(path) and comp_dir:
                path = posixpath.join(comp_dir, path)
            files.append(path)
        unit.files = files
        rows: list[tuple[int, int, int, int]] = []
        for entry in program.get_entries():
            state = entry.state
            if state is not None:
                rows.append((state.address, 0 if state.end_sequence else 1, state.file, state.line))
        rows.sort(key=lambda r: (r[0], r[1]))  # stable: rows at one address keep their order, ends first
        unit.rows = rows
        unit.lines = [r[0] for r in rows]

    def _line(self, unit: _Unit, address: int) -> tuple[str | None, int | None]:
        i = bisect.bisect_right(unit.lines, address) - 1
        if i < 0 or not unit.rows[i][1]:
            return None, None
        _, _, file, line = unit.rows[i]
        return self._file(unit, file), line or None

    @staticmethod
    def _file(unit: _Unit, index: int | None) -> str | None:
        if index is None or not 0 <= index < len(unit.files):
            return None
        return unit.files[index]

    def _ranges(self, die: DIE, cu: CompileUnit, base: int) -> list[tuple[int, int]]:
        attrs = die.attributes
        if "DW_AT_low_pc" in attrs and "DW_AT_high_pc" in attrs:
            low = int(attrs["DW_AT_low_pc"].value)
            high_attr = attrs["DW_AT_high_pc"]
            high = int(high_attr.value)
            if not high_attr.form.startswith("DW_FORM_addr"):
                high += low  # DWARF 4+: a length, not an address
            return [(low, high)]
        if "DW_AT_ranges" in attrs and self._dwarf is not None:
            lists = self._dwarf.range_lists()
            if lists is None:
                return []
            out: list[tuple[int, int]] = []
            for entry in lists.get_range_list_at_offset(int(attrs["DW_AT_ranges"].value), cu=cu):
                if isinstance(entry, BaseAddressEntry):
                    base = entry.base_address
                elif entry.is_absolute:
                    out.append((entry.begin_offset, entry.end_offset))
                else:
                    out.append((base + entry.begin_offset, base + entry.end_offset))
            return out
        return []

    @staticmethod
    def _base(top: DIE) -> int:
        attr = top.attributes.get("DW_AT_low_pc")
        return int(attr.value) if attr is not None else 0

    def _name(self, die: DIE) -> str | None:
        """The function's name, following ``DW_AT_abstract_origin`` / ``DW_AT_specification``."""
        for _ in range(8):
            name = self._text(die, "DW_AT_name") or self._text(die, "DW_AT_linkage_name")
            if name is not None:
                return name
            for ref in ("DW_AT_abstract_origin", "DW_AT_specification"):
                if ref in die.attributes:
                    die = die.get_DIE_from_attribute(ref)
                    break
            else:
                return None
        return None

    @staticmethod
    def _text(die: DIE, name: str) -> str | None:
        attr = die.attributes.get(name)
        if attr is None:
            return None
        value: Any = attr.value
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)

    @staticmethod
    def _int(die: DIE, name: str) -> int | None:
        attr = die.attributes.get(name)
        return int(attr.value) if attr is not None else None


# --- bounds on what a hostile image inflates to -------------------------------------------------------


def _reason(exc: BaseException) -> str:
    """What went wrong, never empty (a bare ``assert`` has no text)."""
    text = str(exc).strip()
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" in {frames[-1].name}" if frames else ""
    return f"{type(exc).__name__}{where}: {text}" if text else f"{type(exc).__name__}{where}"


def _too_much(section: str, claim: int, total: int) -> SerialMcpError:
    return LimitReached(
        ErrorCode.RESOURCE_LIMIT,
        messages.ELF_INFLATES_TOO_MUCH.format(
            section=section, claim=claim, total=total, max=MAX_INFLATED_BYTES
        ),
    )


def _check_claims(elf: ELFFile, size: int) -> None:
    """Refuse an image whose section headers claim more inflated debug data than ``MAX_INFLATED_BYTES``,
    before anything is inflated (reading a header and a compression header costs nothing)."""
    count = elf.num_sections()
    if count * max(int(elf["e_shentsize"]), 1) > size:
        raise InvalidArgument(
            messages.ELF_UNREADABLE.format(error=f"{count} section headers in {size} bytes")
        )
    total = 0
    for section in elf.iter_sections():
        name = section.name
        if section.compressed:
            claim = int(section.data_size)  # ch_size: pyelftools inflates up to it
        elif name.startswith(".zdebug_"):
            claim = _zdebug_claim(elf, section["sh_offset"], section["sh_size"])
        elif section["sh_type"] == "SHT_NOBITS" and name.startswith(_DEBUG_PREFIXES):
            claim = int(section["sh_size"])  # read as that many zeros
        else:
            continue  # read from the image itself: bounded by its size
        total += claim
        if total > MAX_INFLATED_BYTES:
            raise _too_much(name, claim, total)


def _zdebug_claim(elf: ELFFile, offset: int, length: int) -> int:
    """The size a ``.zdebug_*`` section's ``ZLIB`` + big-endian size header claims (0 when it has none:
    pyelftools then refuses it)."""
    if length < 12:
        return 0
    elf.stream.seek(offset)
    head = elf.stream.read(12)
    return struct.unpack(">Q", head[4:])[0] if len(head) == 12 and head[:4] == b"ZLIB" else 0


def _inflate(name: str, stream: Any, claim: int) -> io.BytesIO:
    """A zlib stream inflated in pieces, never more than ``claim`` bytes: more is refused, not made."""
    inflater = zlib.decompressobj()
    out = io.BytesIO()
    made = 0
    pending = b""
    while not inflater.eof:
        pending = pending or stream.read(_INFLATE_PIECE)
        if not pending:
            break
        piece = inflater.decompress(pending, claim + 1 - made)
        pending = inflater.unconsumed_tail
        made += len(piece)
        if made > claim:
            raise _too_much(name, claim, made)
        out.write(piece)
    if made != claim:
        raise InvalidArgument(
            messages.ELF_UNREADABLE.format(error=f"{name} inflates to {made} bytes, its header says {claim}")
        )
    out.seek(0)
    return out


class _BoundedELFFile(ELFFile):
    """pyelftools' ``ELFFile`` with ``.zdebug_*`` sections inflated within their claim (pyelftools'
    own ``_decompress_dwarf_section`` inflates the whole stream first)."""

    @staticmethod
    def _decompress_dwarf_section(section: DebugSectionDescriptor) -> DebugSectionDescriptor:
        stream = section.stream
        stream.seek(0)
        head = stream.read(12)
        if section.size <= 12 or len(head) < 12 or head[:4] != b"ZLIB":
            raise InvalidArgument(messages.ELF_UNREADABLE.format(error=f"{section.name}: not a ZLIB section"))
        claim = struct.unpack(">Q", head[4:])[0]
        out = _inflate(section.name, stream, claim)
        return section._replace(stream=out, size=claim)
