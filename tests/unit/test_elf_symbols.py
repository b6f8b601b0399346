"""serial_mcp.core.elf_symbols against binutils' addr2line, on real ELFs built here with gcc -g -O2.

The programs inline across files and headers, have a hot/cold split function (so ``DW_AT_ranges``), and are
built with DWARF 4 and DWARF 5. Every address inside every function symbol for which addr2line gives a line
must come out as exactly addr2line's ``-f -i`` frames: function, file, line, and the inline chain.
"""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from serial_mcp.core.elf_symbols import MAX_ELF_BYTES, ElfSymbols, Frame
from serial_mcp.errors import ErrorCode, InvalidArgument, SerialMcpError

UTIL_H = """\
int lookup(const char *key);
static inline int twice(int x) { return 2 * x; }
"""
UTIL_C = """\
#include <string.h>
#include "util.h"
static int table[64];
static inline unsigned mix(unsigned h, unsigned c) { return (h ^ c) * 16777619u; }
static inline unsigned hash_str(const char *s) {
    unsigned h = 2166136261u;
    while (*s) h = mix(h, (unsigned char)*s++);
    return h;
}
__attribute__((noinline)) int lookup(const char *key) {
    unsigned h = hash_str(key) % 64;
    if (__builtin_expect(key[0] == 0, 0)) { memset(table, 0, sizeof table); return -1; }
    return table[h]++;
}
"""
MAIN_C = """\
#include <stdio.h>
#include <stdlib.h>
#include "util.h"
__attribute__((cold, noinline)) void fail(const char *m) { fprintf(stderr, "%s\\n", m); abort(); }
static inline int add3(int a) { return twice(a) + 3; }
static inline int check(int v) {
    if (__builtin_expect(v < 0, 0)) { fprintf(stderr, "neg %d\\n", v); exit(3); }
    return v * 7;
}
__attribute__((noinline)) int work(int n) { int s = 0; for (int i = 0; i < n; i++) s += check(i - n / 2 + 1000); return s; }
int main(int argc, char **argv) {
    int r = 0;
    if (argc > 9) fail("too many");
    for (int i = 1; i < argc; i++) r += add3(lookup(argv[i]));
    printf("%d\\n", r + work(argc * 100));
    return r == 42;
}
"""

Expected = list[tuple[str | None, str | None, int | None]]


def _tools() -> None:
    missing = [tool for tool in ("gcc", "addr2line", "strip") if shutil.which(tool) is None]
    if missing:
        pytest.skip(
            f"SKIPPED LOUDLY: {', '.join(missing)} not found: install gcc and binutils to check ELF lookups"
        )


@pytest.fixture(scope="module", params=[4, 5], ids=["dwarf4", "dwarf5"])
def program(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    _tools()
    src = tmp_path_factory.mktemp(f"elf{request.param}")
    (src / "util.h").write_text(UTIL_H)
    (src / "util.c").write_text(UTIL_C)
    (src / "main.c").write_text(MAIN_C)
    out = src / "prog"
    cmd = ["gcc", "-g", f"-gdwarf-{request.param}", "-O2", "-o", str(out), "main.c", "util.c"]
    subprocess.run(cmd, cwd=src, check=True, capture_output=True, timeout=120)
    return out


def function_symbols(data: bytes) -> list[tuple[str, int, int]]:
    elf = ELFFile(io.BytesIO(data))
    symtab = elf.get_section_by_name(".symtab")
    assert symtab is not None
    return sorted(
        (s.name, s["st_value"], s["st_size"])
        for s in symtab.iter_symbols()  # type: ignore[attr-defined]
        if s["st_info"]["type"] == "STT_FUNC" and s["st_value"] and s["st_size"]
    )


def addr2line(prog: Path, addresses: list[int]) -> dict[int, Expected]:
    """``addr2line -f -i -a``: for each address its frames as (function, file, line), innermost first."""
    argv = ["addr2line", "-f", "-i", "-a", "-e", str(prog), *(hex(a) for a in addresses)]
    lines = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=120).stdout.splitlines()
    out: dict[int, Expected] = {}
    current = -1
    i = 0
    while i < len(lines):
        if lines[i].startswith("0x"):
            current = int(lines[i], 16)
            out[current] = []
            i += 1
            continue
        function, where = lines[i], lines[i + 1].partition(" (discriminator")[0]
        file, _, line = where.rpartition(":")
        out[current].append(
            (
                None if function == "??" else function,
                None if file == "??" else file,
                int(line) if line.isdigit() and line != "0" else None,
            )
        )
        i += 2
    return out


def test_every_address_of_every_function_matches_addr2line(program: Path) -> None:
    data = program.read_bytes()
    symbols = ElfSymbols.parse(data)
    assert symbols.has_dwarf
    addresses = [a for _, start, size in function_symbols(data) for a in range(start, start + size)]
    reference = addr2line(program, addresses)
    checked = inlined = 0
    for address in addresses:
        expected = reference[address]
        if expected[0][2] is None:
            continue  # no line for it in the DWARF (the C runtime's start files)
        frames = symbols.lookup(address)
        assert [(f.function, f.file, f.line) for f in frames] == expected, hex(address)
        assert [f.inlined for f in frames] == [True] * (len(frames) - 1) + [False]
        assert all(f.address == address for f in frames)
        checked += 1
        inlined += len(frames) > 1
    assert checked > 200 and inlined > 20  # real coverage, inline chains among it


def test_each_function_start_and_the_cold_part_name_their_function(program: Path) -> None:
    data = program.read_bytes()
    symbols = ElfSymbols.parse(data)
    starts = {name: start for name, start, _ in function_symbols(data)}
    for name in ("main", "work", "lookup", "fail"):
        assert symbols.lookup(starts[name])[-1].function == name
    cold = [start for name, start in starts.items() if name.endswith(".cold")]
    assert cold, "gcc -O2 split no cold part: the DW_AT_ranges path is not exercised"
    for start in cold:
        frames = symbols.lookup(start)
        assert frames[-1].function in ("main", "work") and frames[-1].line is not None


def test_without_dwarf_the_symbol_table_still_names_functions(program: Path, tmp_path: Path) -> None:
    stripped = tmp_path / "stripped"
    subprocess.run(["strip", "--strip-debug", "-o", str(stripped), str(program)], check=True, timeout=60)
    data = stripped.read_bytes()
    symbols = ElfSymbols.parse(data)
    assert not symbols.has_dwarf
    for name, start, size in function_symbols(data):
        assert symbols.lookup(start + size // 2) == [Frame(start + size // 2, name, None, None)]
    assert symbols.lookup(0x10) == []  # nothing there


def test_frame_text() -> None:
    assert str(Frame(1, "square", "/src/prog.c", 3, inlined=True)) == "square at /src/prog.c:3 (inlined)"
    assert str(Frame(1, None, None, None)) == "??"


def test_an_elf_over_the_cap_is_refused_before_parsing() -> None:
    with pytest.raises(SerialMcpError) as info:
        ElfSymbols.parse(b"\x7fELF" + bytes(MAX_ELF_BYTES))
    assert info.value.code == ErrorCode.RESOURCE_LIMIT and str(MAX_ELF_BYTES) in str(info.value)


def test_a_file_that_is_not_an_elf_is_a_clear_error() -> None:
    with pytest.raises(InvalidArgument) as info:
        ElfSymbols.parse(b"\xe9\x03\x02\x20" + bytes(100))  # an ESP32 .bin image starts with 0xE9
    assert info.value.code == ErrorCode.INVALID_ARGUMENT and ".bin" in str(info.value)


def test_a_truncated_elf_is_a_clear_error(program: Path) -> None:
    with pytest.raises(InvalidArgument) as info:
        ElfSymbols.parse(program.read_bytes()[:200])
    assert "could not be read" in str(info.value)
