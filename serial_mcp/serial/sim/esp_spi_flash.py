"""The ESP32's SPI0 flash controller and the flash chip behind it, as far as a ROM-loader client drives them
(sans-IO).

esptool reads the flash's JEDEC id (and its SFDP signature, its status registers) without a stub by
programming the SPI peripheral's "user command" registers through WRITE_REG: command byte and length
in ``USR2``, the phases (command, address, dummy, MISO, MOSI) in ``USR``, data lengths in
``MOSI_DLEN``/``MISO_DLEN``, outgoing data in ``W0``…``W15``; setting ``USR`` (bit 18) in ``CMD`` runs it,
the bit clears when done, and what the chip answered is in ``W0``… . This module runs such a command
against ``SpiFlashChip``: a 4 MB Winbond-like NOR flash (JEDEC ``EF 40 16``).
"""

from __future__ import annotations

from typing import Final

SPI_BASE: Final = 0x3FF42000  # SPI0 (the flash's own controller) on an ESP32
SPI_SPAN: Final = 0x100
CMD: Final = 0x00
ADDR: Final = 0x04
USR: Final = 0x1C
USR1: Final = 0x20
USR2: Final = 0x24
MOSI_DLEN: Final = 0x28
MISO_DLEN: Final = 0x2C
W0: Final = 0x80
W_COUNT: Final = 16
CMD_USR: Final = 1 << 18
USR_COMMAND: Final = 1 << 31
USR_ADDR: Final = 1 << 30
USR_MISO: Final = 1 << 28
USR_MOSI: Final = 1 << 27

JEDEC_ID: Final = bytes((0xEF, 0x40, 0x16))  # Winbond, SPI NOR, 2^22 bytes = 4 MB
# The start of the SFDP table: signature "SFDP", revision 1.5, one parameter header (JEDEC basic table).
SFDP: Final = b"SFDP\x05\x01\x00\xff" + b"\x00\x05\x01\x09\x80\x00\x00\xff"
WEL: Final = 0x02  # status register: write enable latch


class SpiFlashChip:
    """The NOR flash on the SPI bus: identification, SFDP and status registers. Array reads and writes go
    through the ROM loader's flash commands, not through here."""

    def __init__(self, array: bytearray) -> None:
        self.array = array
        self.status = 0  # status registers 1-3, low byte first
        self.volatile_write = False  # after WEVSR (0x50)
        self.commands: list[int] = []  # the last few command bytes run (for tests), bounded

    def run(self, command: int, mosi: bytes, addr: int | None, miso_len: int) -> bytes:
        """Run ``command`` with ``mosi`` sent after it; return ``miso_len`` bytes of answer."""
        self.commands = [*self.commands[-31:], command]
        answer = b""
        if command == 0x9F:  # RDID
            answer = JEDEC_ID
        elif command in (0x05, 0x35, 0x15):  # RDSR, RDSR2, RDSR3
            answer = bytes(((self.status >> (8 * (0x05, 0x35, 0x15).index(command))) & 0xFF,))
        elif command == 0x5A:  # RDSFDP (24-bit address, 8 dummy cycles)
            start = addr or 0
            answer = SFDP[start : start + miso_len] if start < len(SFDP) else b""
        elif command == 0x06:  # WREN
            self.status |= WEL
        elif command == 0x04:  # WRDI
            self.status &= ~WEL
            self.volatile_write = False
        elif command == 0x50:  # WEVSR
            self.volatile_write = True
        elif command in (0x01, 0x31, 0x11) and mosi and (self.status & WEL or self.volatile_write):
            # WRSR (1 or 2 bytes), WRSR2, WRSR3: only after WREN or WEVSR
            shift = 8 * (0x01, 0x31, 0x11).index(command)
            value = int.from_bytes(mosi[:2] if command == 0x01 else mosi[:1], "little")
            width = 0xFFFF if command == 0x01 and len(mosi) > 1 else 0xFF
            kept = self.status & ~(width << shift) & 0xFFFFFF
            self.status = (kept | (value << shift)) & ~WEL & 0xFFFFFF
            self.volatile_write = False
        # a command the chip does not know leaves MISO floating high
        return answer[:miso_len].ljust(miso_len, b"\xff")


class SpiPeripheral:
    """SPI0's registers as READ_REG/WRITE_REG see them; a write of ``CMD_USR`` to ``CMD`` runs the command."""

    def __init__(self, chip: SpiFlashChip) -> None:
        self.chip = chip
        self.regs: dict[int, int] = {}
        self.runs = 0

    def reset(self) -> None:
        self.regs.clear()

    @staticmethod
    def owns(addr: int) -> bool:
        return SPI_BASE <= addr < SPI_BASE + SPI_SPAN and addr % 4 == 0

    def read(self, addr: int) -> int:
        return self.regs.get(addr - SPI_BASE, 0)

    def write(self, addr: int, value: int) -> None:
        offset = addr - SPI_BASE
        self.regs[offset] = value & 0xFFFFFFFF
        if offset == CMD and value & CMD_USR:
            self._run_user_command()
            self.regs[CMD] = value & ~CMD_USR  # done at once

    def _run_user_command(self) -> None:
        self.runs += 1
        usr = self.regs.get(USR, 0)
        usr2 = self.regs.get(USR2, 0)
        if not usr & USR_COMMAND:
            return
        command = usr2 & ((1 << ((usr2 >> 28) + 1)) - 1) & 0xFF
        mosi = b""
        if usr & USR_MOSI:
            nbytes = min(4 * W_COUNT, (self.regs.get(MOSI_DLEN, 0) + 8) // 8)
            sent = b"".join(self.regs.get(W0 + 4 * i, 0).to_bytes(4, "little") for i in range(W_COUNT))
            mosi = sent[:nbytes]
        addr = None
        if usr & USR_ADDR:
            addr_bits = ((self.regs.get(USR1, 0) >> 26) & 0x3F) + 1
            addr = self.regs.get(ADDR, 0) >> (32 - addr_bits)  # sent from the register's MSB
        if not usr & USR_MISO:
            self.chip.run(command, mosi, addr, 0)
            return
        nbytes = min(4 * W_COUNT, (self.regs.get(MISO_DLEN, 0) + 8) // 8)
        answer = self.chip.run(command, mosi, addr, nbytes).ljust(-(-nbytes // 4) * 4, b"\x00")
        for i in range(0, len(answer), 4):
            self.regs[W0 + i] = int.from_bytes(answer[i : i + 4], "little")
