"""A simulated ESP32 ROM loader (sans-IO): the commands esptool sends with ``--no-stub``, answered the way the
chip's ROM answers them, over a 4 MB simulated SPI flash.

``Esp32RomLoader.handle(frame)`` takes one decoded SLIP frame and returns the response frames (not yet
SLIP-encoded) and what the chip does next (``Exit``: change baud rate, leave the loader). It never blocks
and its work per command is bounded: a data block is at most ``MAX_DATA_BLOCK`` bytes, inflating one block
stops at the size its FLASH_DEFL_BEGIN declared, an MD5 covers at most the flash.

What it answers: SYNC (eight answers, as the ROM does), READ_REG/WRITE_REG (the chip-detect magic word,
eFuse block 0 with a MAC and chip revision v3.0, the UART clock divider that says "40 MHz crystal", the
RTC calibration esptool's ESP32 baud workaround reads, the SPI0 peripheral's user-command registers over a
Winbond-like flash chip with a JEDEC id and SFDP), SPI_ATTACH, SPI_SET_PARAMS, CHANGE_BAUDRATE,
FLASH_BEGIN/DATA/END, FLASH_DEFL_BEGIN/DATA/END (zlib), SPI_FLASH_MD5 (32 hex digits, as the ROM sends
them), READ_FLASH_SLOW, MEM_BEGIN/DATA/END. Anything else — GET_SECURITY_INFO among them, which the
ESP32's ROM predates — gets the failure status 0x01 0x05 (invalid message).
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from serial_mcp.serial.sim import esp_rom_protocol as p
from serial_mcp.serial.sim.esp_spi_flash import SpiFlashChip, SpiPeripheral

Words = tuple[int, ...]  # the little-endian 32-bit words a command's data starts with

FLASH_SIZE: Final = 4 * 1024 * 1024
SECTOR: Final = 0x1000
MAGIC_REG: Final = 0x40001000
MAGIC_VALUE: Final = 0x00F01D83  # what that ROM word holds on an ESP32
EFUSE_BASE: Final = 0x3FF5A000
EFUSE_WORDS: Final = 0x3FF5A000 + 4 * 64  # block 0 .. block 3 read registers
APB_CTL_DATE: Final = 0x3FF6607C
UART0_CLKDIV: Final = 0x3FF40014
RTC_CALI: Final = 0x3FF5F06C
APB_HZ: Final = 40_000_000
CALI_VALUE: Final = 2090  # with CK8M 0x31: the ROM's own crystal estimate is 40.004 MHz, as on a real chip
CK8M_EFUSE: Final = 0x31
DEFAULT_MAC: Final = bytes.fromhex("240ac4123456")  # Espressif's OUI 24:0A:C4
MAX_REGS: Final = 4096  # distinct addresses WRITE_REG may store (plain RAM words); more are refused
MAX_RAM: Final = 0x60000  # the largest MEM_BEGIN image
RAM_RANGES: Final = ((0x3FFAE000, 0x40000000), (0x40070000, 0x400C0000), (0x3FF80000, 0x3FF82000))
READ_SLOW_BLOCK: Final = 64


def mac_crc8(mac: bytes) -> int:
    """The CRC eFuse block 0 keeps beside the MAC (CRC-8/MAXIM, reflected polynomial 0x8C)."""
    crc = 0
    for b in mac:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x8C if crc & 1 else crc >> 1
    return crc


def efuse_block0(mac: bytes) -> list[int]:
    """Words 0-6 of eFuse block 0 for an ESP32-D0WD-V3 rev v3.0: MAC (words 1-2 with its CRC), package and
    revision bits (word 3, 5), CK8M frequency and ADC vref (word 4), no security fuse burnt."""
    return [
        0,
        int.from_bytes(mac[2:6], "big"),
        (mac_crc8(mac) << 16) | int.from_bytes(mac[0:2], "big"),
        0x0000A200,  # rev bit 0, package D0WD, 240 MHz rated, dual core, BT
        0x00000500 | CK8M_EFUSE,
        0xF0100000,  # rev bit 1, flash_crypt_config 0xF, default SPI pads
        0,  # coding scheme none, no ABS_DONE
    ]


def uart_clkdiv(baud: int) -> int:
    """UART_CLKDIV for ``baud`` off the 40 MHz APB clock: integer part, and sixteenths in bits 20-23."""
    sixteenths = (APB_HZ * 16 + baud // 2) // max(1, baud)
    return ((sixteenths & 0xF) << 20) | (sixteenths >> 4)


def rom_baud(requested: int) -> int:
    """The baud rate the ROM really sets for CHANGE_BAUDRATE ``requested``: it divides its own crystal
    estimate (a little off 40 MHz, from the RTC calibration) by ``requested``, the UART runs off the
    real crystal. esptool pre-scales ``requested`` for exactly this, so the two cancel out."""
    estimate = CALI_VALUE * 15625 * CK8M_EFUSE / 40
    return round(requested * APB_HZ / estimate)


@dataclass(frozen=True)
class Exit:
    """What the chip does after the answers are sent: ``baud`` (switch the UART), ``run`` (leave the loader
    for the app in flash), ``reboot`` (a software reset), ``jump`` (run RAM code it cannot simulate)."""

    kind: str
    value: int = 0


@dataclass
class Result:
    frames: list[bytes] = field(default_factory=list)
    exit: Exit | None = None


@dataclass
class _Download:
    """One FLASH_BEGIN / FLASH_DEFL_BEGIN / MEM_BEGIN session."""

    kind: str  # "flash", "defl", "mem"
    offset: int
    size: int
    blocks: int
    block_size: int
    seq: int = 0
    written: int = 0
    inflater: zlib._Decompress | None = None
    ram: bytearray | None = None


class Esp32RomLoader:
    """The ROM loader of one simulated ESP32 and its flash; survives resets (the flash keeps its bytes)."""

    def __init__(self, mac: bytes = DEFAULT_MAC, flash_size: int = FLASH_SIZE) -> None:
        self.mac = mac
        self.flash = bytearray(b"\xff" * flash_size)
        self.efuse = efuse_block0(mac)
        self.chip = SpiFlashChip(self.flash)
        self.spi = SpiPeripheral(self.chip)
        self.uart_baud = 115200  # set by the board: what the UART runs at now
        self.regs: dict[int, int] = {}
        self.attached = False
        self.flash_param_size = flash_size  # SPI_SET_PARAMS total size (default: the chip's)
        self.session: _Download | None = None
        self.commands = 0  # commands answered since the last reset
        self.unknown: list[int] = []  # ops answered "invalid message" (bounded)

    def reset(self) -> None:
        """A chip reset: the loader forgets its session and SPI setup; the flash keeps its bytes."""
        self.regs.clear()
        self.spi.reset()
        self.attached = False
        self.flash_param_size = len(self.flash)
        self.session = None
        self.commands = 0

    # --- dispatch -----------------------------------------------------------------------------------

    def handle(self, frame: bytes | p.Oversize) -> Result:
        if isinstance(frame, p.Oversize):
            op = frame.head[1] if len(frame.head) > 1 else 0
            return Result([p.response(op, error=p.ERR_INVALID_MESSAGE)])
        cmd = p.parse_command(frame)
        if cmd is None:
            return Result()  # not a request: the ROM ignores it
        self.commands += 1
        if cmd.size != len(cmd.data):
            return Result([p.response(cmd.op, error=p.ERR_INVALID_MESSAGE)])
        handler, count = _HANDLERS.get(cmd.op, (None, 0))
        if handler is None:
            if len(self.unknown) < 64:
                self.unknown.append(cmd.op)
            return Result([p.response(cmd.op, error=p.ERR_INVALID_MESSAGE)])
        w = p.words(cmd.data, count)
        if w is None:  # shorter than the words the command takes
            return self._fail(cmd.op, p.ERR_INVALID_MESSAGE)
        return handler(self, cmd, w)

    @staticmethod
    def _fail(op: int, error: int) -> Result:
        return Result([p.response(op, error=error)])

    @staticmethod
    def _ok(op: int, value: int = 0, payload: bytes = b"") -> Result:
        return Result([p.response(op, value, payload)])

    # --- commands -----------------------------------------------------------------------------------

    def _sync(self, cmd: p.Command, _w: Words) -> Result:
        if cmd.data != p.SYNC_PAYLOAD:
            return self._fail(cmd.op, p.ERR_INVALID_MESSAGE)
        return Result([p.response(p.SYNC, p.SYNC_VALUE)] * p.SYNC_ANSWERS)

    def _read_reg(self, cmd: p.Command, w: Words) -> Result:
        return self._ok(cmd.op, self.read_word(w[0]))

    def _write_reg(self, cmd: p.Command, _w: Words) -> Result:
        if not cmd.data or len(cmd.data) % 16:
            return self._fail(cmd.op, p.ERR_INVALID_MESSAGE)
        for addr, value, mask, _delay_us in struct.iter_unpack("<IIII", cmd.data):
            if not self.write_word(addr, value, mask):
                return self._fail(cmd.op, p.ERR_FAILED)
        return self._ok(cmd.op)

    def read_word(self, addr: int) -> int:
        if addr == MAGIC_REG:
            return MAGIC_VALUE
        if EFUSE_BASE <= addr < EFUSE_WORDS and addr % 4 == 0:
            n = (addr - EFUSE_BASE) // 4
            return self.efuse[n] if n < len(self.efuse) else 0
        if addr == APB_CTL_DATE:
            return 0x16042000 | (1 << 31)  # bit 31: the third revision bit (v3)
        if addr == UART0_CLKDIV:
            return uart_clkdiv(self.uart_baud)
        if addr == RTC_CALI:
            return CALI_VALUE << 7
        if self.spi.owns(addr):
            return self.spi.read(addr)
        return self.regs.get(addr, 0)

    def write_word(self, addr: int, value: int, mask: int) -> bool:
        if self.spi.owns(addr):
            self.spi.write(addr, (self.spi.read(addr) & ~mask) | (value & mask))
            return True
        if addr not in self.regs and len(self.regs) >= MAX_REGS:
            return False
        self.regs[addr] = (self.regs.get(addr, 0) & ~mask) | (value & mask)
        return True

    def _spi_attach(self, cmd: p.Command, _w: Words) -> Result:
        if len(cmd.data) not in (4, 8):
            return self._fail(cmd.op, p.ERR_INVALID_MESSAGE)
        self.attached = True
        return self._ok(cmd.op)

    def _spi_set_params(self, cmd: p.Command, w: Words) -> Result:
        _, total, _block, sector, page, _mask = w
        if not 0 < total <= 16 * 1024 * 1024 or sector != SECTOR or page != 256:
            return self._fail(cmd.op, p.ERR_INVALID_PARAM)
        self.flash_param_size = total
        return self._ok(cmd.op)

    def _change_baud(self, cmd: p.Command, _w: Words) -> Result:
        w = p.words(cmd.data, 2)  # short: a bad parameter, not a bad message
        if w is None or not 300 <= w[0] <= 5_000_000:
            return self._fail(cmd.op, p.ERR_INVALID_PARAM)
        result = self._ok(cmd.op)
        result.exit = Exit("baud", rom_baud(w[0]))  # the answer goes out at the old rate
        return result

    def _flash_limit(self) -> int:
        return min(len(self.flash), self.flash_param_size)

    def _begin(self, cmd: p.Command, w: Words, kind: str) -> Result:
        if len(cmd.data) != 16:  # the ESP32 ROM takes no fifth (encryption) word
            return self._fail(cmd.op, p.ERR_INVALID_MESSAGE)
        size, blocks, block_size, offset = w
        if size and not self.attached:  # the ESP32 ROM needs SPI_ATTACH before it touches the flash
            return self._fail(cmd.op, p.ERR_FAILED)
        if block_size > p.MAX_DATA_BLOCK or offset % SECTOR or offset + size > self._flash_limit():
            return self._fail(cmd.op, p.ERR_INVALID_PARAM)
        end = offset + size
        erase_end = min(-(-end // SECTOR) * SECTOR, len(self.flash))
        self.flash[offset:erase_end] = b"\xff" * (erase_end - offset)  # the ROM erases up front
        inflater = zlib.decompressobj() if kind == "defl" else None
        self.session = _Download(kind, offset, size, blocks, block_size, inflater=inflater)
        return self._ok(cmd.op)

    def _flash_begin(self, cmd: p.Command, w: Words) -> Result:
        return self._begin(cmd, w, "flash")

    def _defl_begin(self, cmd: p.Command, w: Words) -> Result:
        return self._begin(cmd, w, "defl")

    def _data(self, cmd: p.Command, w: Words) -> Result:
        """A _DATA command: its payload checked against the open session of its kind, then written."""
        kind, write = _DATA[cmd.op]
        s = self.session
        if s is None or s.kind != kind:
            return self._fail(cmd.op, p.ERR_FAILED)
        length, seq = w[0], w[1]
        data = cmd.data[16:]
        if length != len(data) or length > s.block_size:
            return self._fail(cmd.op, p.ERR_INVALID_MESSAGE)
        if p.checksum(data) != cmd.checksum & 0xFF:
            return self._fail(cmd.op, p.ERR_CHECKSUM)
        if seq != s.seq or seq >= s.blocks:
            return self._fail(cmd.op, p.ERR_INVALID_PARAM)
        return write(self, cmd, data, s)

    def _program(self, offset: int, data: bytes) -> bool:
        """NOR programming: bits only go from 1 to 0, so a byte becomes old AND new."""
        end = offset + len(data)
        if end > self._flash_limit():
            return False
        old = int.from_bytes(self.flash[offset:end], "little")
        self.flash[offset:end] = (old & int.from_bytes(data, "little")).to_bytes(len(data), "little")
        return True

    def _flash_data(self, cmd: p.Command, data: bytes, s: _Download) -> Result:
        if not self._program(s.offset + s.seq * s.block_size, data):
            return self._fail(cmd.op, p.ERR_FLASH_WRITE)
        s.seq += 1
        s.written = min(s.size, s.seq * s.block_size)
        return self._ok(cmd.op)

    def _defl_data(self, cmd: p.Command, data: bytes, s: _Download) -> Result:
        assert s.inflater is not None
        room = s.size - s.written
        try:
            out = s.inflater.decompress(data, room) if room else b""  # never more than was declared
            tail = s.inflater.unconsumed_tail if room else data
            if tail and (s.inflater.decompress(tail, 1) or s.inflater.unconsumed_tail):
                return self._fail(cmd.op, p.ERR_DEFLATE)  # inflates past the size FLASH_DEFL_BEGIN declared
        except zlib.error:
            return self._fail(cmd.op, p.ERR_DEFLATE)
        if not self._program(s.offset + s.written, out):
            return self._fail(cmd.op, p.ERR_FLASH_WRITE)
        s.written += len(out)
        s.seq += 1
        return self._ok(cmd.op)

    def _end(self, cmd: p.Command, w: Words) -> Result:
        """FLASH_END / FLASH_DEFL_END: word 0 is 1 to run the app in flash, 0 to reboot."""
        self.session = None  # the loader leaves, session or not
        result = self._ok(cmd.op)
        result.exit = Exit("run") if w[0] else Exit("reboot")
        return result

    def _md5(self, cmd: p.Command, w: Words) -> Result:
        addr, size = w[0], w[1]
        if not self.attached:
            return self._fail(cmd.op, p.ERR_FAILED)
        if addr + size > self._flash_limit():
            return self._fail(cmd.op, p.ERR_FLASH_READ)
        digest = hashlib.md5(self.flash[addr : addr + size]).hexdigest().encode()
        return self._ok(cmd.op, payload=digest)  # the ROM sends the digest as 32 hex characters

    def _read_slow(self, cmd: p.Command, w: Words) -> Result:
        addr, length = w
        if not self.attached:
            return self._fail(cmd.op, p.ERR_FAILED)
        if length > READ_SLOW_BLOCK:
            return self._fail(cmd.op, p.ERR_FLASH_READ_LENGTH)
        if addr + length > self._flash_limit():
            return self._fail(cmd.op, p.ERR_FLASH_READ)
        block = bytes(self.flash[addr : addr + length]).ljust(READ_SLOW_BLOCK, b"\xff")
        return self._ok(cmd.op, payload=block)  # always a 64-byte buffer

    def _mem_begin(self, cmd: p.Command, w: Words) -> Result:
        size, blocks, block_size, offset = w
        if size > MAX_RAM or block_size > p.MAX_DATA_BLOCK:
            return self._fail(cmd.op, p.ERR_RAM_SIZE)
        if not any(lo <= offset and offset + size <= hi for lo, hi in RAM_RANGES):
            return self._fail(cmd.op, p.ERR_RAM_ADDRESS)
        self.session = _Download("mem", offset, size, blocks, block_size, ram=bytearray(size))
        return self._ok(cmd.op)

    def _mem_data(self, cmd: p.Command, data: bytes, s: _Download) -> Result:
        assert s.ram is not None
        at = s.seq * s.block_size
        if at + len(data) > s.size:
            return self._fail(cmd.op, p.ERR_RAM_SIZE)
        s.ram[at : at + len(data)] = data
        s.seq += 1
        return self._ok(cmd.op)

    def _mem_end(self, cmd: p.Command, w: Words) -> Result:
        no_entry, entry = w
        if self.session is not None and self.session.kind == "mem":
            self.session = None
        result = self._ok(cmd.op)
        if not no_entry:
            result.exit = Exit("jump", entry)
        return result


_HANDLERS: dict[int, tuple[Callable[[Esp32RomLoader, p.Command, Words], Result], int]] = {
    # each command, and how many 32-bit words its data holds at least (fewer: "invalid message")
    p.SYNC: (Esp32RomLoader._sync, 0),
    p.READ_REG: (Esp32RomLoader._read_reg, 1),
    p.WRITE_REG: (Esp32RomLoader._write_reg, 0),
    p.SPI_ATTACH: (Esp32RomLoader._spi_attach, 0),
    p.SPI_SET_PARAMS: (Esp32RomLoader._spi_set_params, 6),
    p.CHANGE_BAUDRATE: (Esp32RomLoader._change_baud, 0),
    p.FLASH_BEGIN: (Esp32RomLoader._flash_begin, 4),
    p.FLASH_DATA: (Esp32RomLoader._data, 4),
    p.FLASH_END: (Esp32RomLoader._end, 1),
    p.FLASH_DEFL_BEGIN: (Esp32RomLoader._defl_begin, 4),
    p.FLASH_DEFL_DATA: (Esp32RomLoader._data, 4),
    p.FLASH_DEFL_END: (Esp32RomLoader._end, 1),
    p.SPI_FLASH_MD5: (Esp32RomLoader._md5, 4),
    p.READ_FLASH_SLOW: (Esp32RomLoader._read_slow, 2),
    p.MEM_BEGIN: (Esp32RomLoader._mem_begin, 4),
    p.MEM_DATA: (Esp32RomLoader._data, 4),
    p.MEM_END: (Esp32RomLoader._mem_end, 2),
}

_DATA = {  # a _DATA command: the session kind it belongs to, and how its checked block is written
    p.FLASH_DATA: ("flash", Esp32RomLoader._flash_data),
    p.FLASH_DEFL_DATA: ("defl", Esp32RomLoader._defl_data),
    p.MEM_DATA: ("mem", Esp32RomLoader._mem_data),
}
