"""Issue 36.3: a hostile or damaged firmware ELF is bounded and isolated.

* Compressed debug sections are judged by what they claim before anything is inflated (``SHF_COMPRESSED``'s
  ``ch_size``, a ``.zdebug_*`` section's ``ZLIB`` header), against ``MAX_INFLATED_BYTES`` in all, and a
  ``.zdebug_*`` section that inflates past its claim is stopped there (pyelftools inflates it whole first).
* Whatever pyelftools raises on a damaged image is ``invalid_argument`` with a reason, never an empty
  ``internal_error``; whatever it raises in a lookup falls back to the symbol table.
* One event whose lookup fails is left not decoded: the watch goes on, and a watch that failed is restarted
  and says so in ``get_status``.

The ELFs are built here with gcc -g and reshaped with objcopy, as a hostile file would be.
"""

from __future__ import annotations

import asyncio
import io
import random
import shutil
import struct
import subprocess
import threading
import tracemalloc
import zlib
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile

from serial_mcp import Engine
from serial_mcp.core.elf_symbols import MAX_INFLATED_BYTES, ElfSymbols
from serial_mcp.errors import ErrorCode, SerialMcpError
from serial_mcp.serial.fake import FakeOpener
from tests.elf_build import build_app_elf


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_app_elf(tmp_path_factory.mktemp("hostile-elf"), "objcopy")


def _objcopy(program: Path, out: Path, *args: str) -> bytes:
    subprocess.run(["objcopy", *args, str(program), str(out)], check=True, capture_output=True, timeout=60)
    return out.read_bytes()


def _section_offset(data: bytes, name: str) -> int:
    section = ELFFile(io.BytesIO(data)).get_section_by_name(name)
    assert section is not None, name
    return int(section["sh_offset"])


def _address(program: Path, function: str) -> int:
    out = subprocess.run(["nm", str(program)], capture_output=True, text=True, check=True).stdout
    return next(int(line.split()[0], 16) for line in out.splitlines() if line.endswith(" " + function))


def _refused(data: bytes) -> SerialMcpError:
    with pytest.raises(SerialMcpError) as info:
        ElfSymbols.parse(data)
    return info.value


def test_a_compressed_section_claiming_a_gibibyte_is_refused_before_inflating(
    program: Path, tmp_path: Path
) -> None:
    data = bytearray(_objcopy(program, tmp_path / "gz.elf", "--compress-debug-sections=zlib"))
    at = _section_offset(bytes(data), ".debug_info")
    data[at + 8 : at + 16] = struct.pack("<Q", 1 << 30)  # Elf64_Chdr.ch_size
    error = _refused(bytes(data))
    assert error.code == ErrorCode.RESOURCE_LIMIT
    assert (
        ".debug_info" in error.message
        and str(1 << 30) in error.message
        and str(MAX_INFLATED_BYTES) in error.message
    )


def test_a_zdebug_section_claiming_a_gibibyte_is_refused_before_inflating(
    program: Path, tmp_path: Path
) -> None:
    payload = tmp_path / "claim.bin"
    payload.write_bytes(b"ZLIB" + struct.pack(">Q", 1 << 30) + zlib.compress(bytes(4096)))
    data = _objcopy(
        program, tmp_path / "z.elf", "--rename-section", ".debug_info=.zdebug_info",
        "--update-section", f".debug_info={payload}",
    )  # fmt: skip
    error = _refused(data)
    assert error.code == ErrorCode.RESOURCE_LIMIT and ".zdebug_info" in error.message


def test_a_zdebug_bomb_is_stopped_at_its_claim_not_inflated_whole(program: Path, tmp_path: Path) -> None:
    bomb = zlib.compress(bytes(64 << 20), 9)  # 64 MiB of zeros in ~64 KiB; it claims 4 KiB
    payload = tmp_path / "bomb.bin"
    payload.write_bytes(b"ZLIB" + struct.pack(">Q", 4096) + bomb)
    data = _objcopy(
        program, tmp_path / "bomb.elf", "--rename-section", ".debug_info=.zdebug_info",
        "--update-section", f".debug_info={payload}",
    )  # fmt: skip
    tracemalloc.start()
    try:
        error = _refused(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert error.code == ErrorCode.RESOURCE_LIMIT and ".zdebug_info" in error.message
    assert peak < 16 << 20, peak  # pyelftools alone makes all 64 MiB before it compares


def test_mutated_elfs_are_read_or_refused_with_a_reason_never_anything_else(program: Path) -> None:
    """40 ELFs, each with 4 bytes changed in its header, section headers, symbols or DWARF (seeded):
    each is read (and every function's address looks up without raising) or refused with a stable
    code and a reason; one of them made pyelftools assert with no text."""
    data = program.read_bytes()
    elf = ELFFile(io.BytesIO(data))
    regions = [(0, 64), (elf["e_shoff"], elf["e_shoff"] + elf["e_shnum"] * elf["e_shentsize"])]
    regions += [
        (s["sh_offset"], s["sh_offset"] + s["sh_size"])
        for s in elf.iter_sections()
        if s.name.startswith(".debug_") or s.name == ".symtab"
    ]
    addresses = [
        _address(program, f) + k for f in ("crash_here", "app_main", "main") for k in range(0, 16, 3)
    ]
    rng = random.Random(36)
    outcomes: dict[str, int] = {}
    for _ in range(40):
        mutated = bytearray(data)
        for _ in range(4):
            lo, hi = rng.choice(regions)
            mutated[rng.randrange(lo, hi)] = rng.randrange(256)
        try:
            symbols = ElfSymbols.parse(bytes(mutated))
        except SerialMcpError as exc:
            assert exc.code in (ErrorCode.INVALID_ARGUMENT, ErrorCode.RESOURCE_LIMIT)
            assert "()" not in exc.message and exc.message.strip()
            outcomes[exc.code] = outcomes.get(exc.code, 0) + 1
            continue
        for address in addresses:
            symbols.lookup(address)
        outcomes["read"] = outcomes.get("read", 0) + 1
    assert outcomes.get("read", 0) > 20 and outcomes.get(ErrorCode.INVALID_ARGUMENT, 0) > 0


def test_an_elf_without_debug_line_falls_back_to_the_symbol_table(program: Path, tmp_path: Path) -> None:
    data = _objcopy(program, tmp_path / "noline.elf", "--remove-section", ".debug_line")
    symbols = ElfSymbols.parse(data)
    address = _address(program, "crash_here")
    assert [f.function for f in symbols.lookup(address)] == ["crash_here"]  # pyelftools asserted here


def _panic(pc: int) -> bytes:
    return (
        b"Guru Meditation Error: Core  0 panic'ed (LoadProhibited). Exception was unhandled.\r\n"
        + f"PC      : 0x{pc:08x}  PS      : 0x00060330  A0      : 0x800d0b6c\r\n".encode()
        + f"Backtrace: 0x{pc:08x}:0x3ffb5c30\r\n".encode()
        + b"\r\nRebooting...\r\n"
        + b"ets Jun  8 2016 00:22:57\r\n\r\nrst:0xc (SW_CPU_RESET),boot:0x13 (SPI_FAST_FLASH_BOOT)\r\n"
    )


class _Failing:
    """A parsed ELF whose lookups raise what pyelftools raised on a damaged unit."""

    def __init__(self) -> None:
        self.calls = 0

    def lookup(self, address: int) -> Any:
        self.calls += 1
        raise AssertionError


@pytest.mark.anyio
async def test_a_failing_lookup_leaves_one_event_not_decoded_and_the_watch_goes_on(
    program: Path, tmp_path: Path
) -> None:
    captures = tmp_path / "captures"
    captures.mkdir()
    shutil.copy(program, captures / "app.elf")
    pc = _address(program, "crash_here") + 2
    opener = FakeOpener()
    device = opener.add("/dev/esp")
    async with Engine(opener=opener, capture_dir=captures) as engine:
        conn = await engine.open("/dev/esp", elf="app.elf")
        watch = engine.services.manager.get(conn.id).events
        assert watch.elf is not None
        good = watch.elf.symbols
        failing = _Failing()
        watch.elf.symbols = failing  # type: ignore[assignment]
        device.feed(_panic(pc))
        first = await conn.read(until=["crash"], timeout_ms=5000)
        assert first.stop_reason == "event" and failing.calls
        crash = next(e for e in first.events or [] if e["kind"] == "crash")
        assert "where" not in crash
        watch.elf.symbols = good
        device.feed(_panic(pc))
        second = await conn.read(until=["crash"], timeout_ms=5000)
        assert second.stop_reason == "event"  # the watch lived through the failed lookup
        crash = next(e for e in second.events or [] if e["kind"] == "crash")
        assert crash["where"].startswith("crash_here at ")
        assert conn.status().events["not_decoded"] == 1  # type: ignore[index]


@pytest.mark.anyio
async def test_a_watch_that_failed_is_restarted_and_get_status_says_so() -> None:
    opener = FakeOpener()
    device = opener.add("/dev/esp")
    async with Engine(opener=opener) as engine:
        conn = await engine.open("/dev/esp")
        watch = engine.services.manager.get(conn.id).events
        detector = watch.detector
        real_feed = detector.feed
        failures = [RuntimeError("a detector bug")]
        failed = threading.Event()

        def feed(*args: Any) -> Any:
            if failures:
                failed.set()
                raise failures.pop()
            return real_feed(*args)

        detector.feed = feed  # type: ignore[method-assign,assignment]
        device.feed(b"some line\r\n")
        assert await asyncio.to_thread(failed.wait, 5)
        device.feed(_panic(0x400D1234))
        r = await conn.read(until=["crash"], timeout_ms=5000)
        assert r.stop_reason == "event"  # found by the restarted watch
        status: dict[str, Any] = conn.status().events  # type: ignore[assignment]
        assert status["watch_restarts"] == 1 and "a detector bug" in status["watch_failure"]
        assert "watch_stopped" not in status
