"""The wire format of Espressif's serial ROM loader (sans-IO): SLIP framing, command and response packets.

Written from the protocol as Espressif documents it ("Serial Protocol", esptool docs) for the simulated
ESP32 (``sim://esp32-rom``). Every packet is SLIP-framed: ``0xC0`` opens and closes it, ``0xC0`` and
``0xDB`` inside are sent as ``0xDB 0xDC`` and ``0xDB 0xDD``. A command is ``direction 0x00, op, size
(u16), checksum (u32), data``; a response is ``direction 0x01, op, size, value (u32), data``, where an
ESP32 ROM ends ``data`` with four status bytes (status, error, two reserved). All fields are
little-endian.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

SLIP_END: Final = 0xC0
SLIP_ESC: Final = 0xDB
SLIP_ESC_END: Final = 0xDC
SLIP_ESC_ESC: Final = 0xDD

# Command ops the ESP32 ROM loader knows (the stub-only ones, 0xD0 and up, are unknown to it).
FLASH_BEGIN: Final = 0x02
FLASH_DATA: Final = 0x03
FLASH_END: Final = 0x04
MEM_BEGIN: Final = 0x05
MEM_END: Final = 0x06
MEM_DATA: Final = 0x07
SYNC: Final = 0x08
WRITE_REG: Final = 0x09
READ_REG: Final = 0x0A
SPI_SET_PARAMS: Final = 0x0B
SPI_ATTACH: Final = 0x0D
READ_FLASH_SLOW: Final = 0x0E
CHANGE_BAUDRATE: Final = 0x0F
FLASH_DEFL_BEGIN: Final = 0x10
FLASH_DEFL_DATA: Final = 0x11
FLASH_DEFL_END: Final = 0x12
SPI_FLASH_MD5: Final = 0x13

# ROM loader error codes (the byte after a failure status).
ERR_INVALID_PARAM: Final = 0x01
ERR_INVALID_MESSAGE: Final = 0x05  # "the format of the received message is invalid": also unknown commands
ERR_FAILED: Final = 0x06  # "message is ok, but the running result is wrong"
ERR_CHECKSUM: Final = 0x07
ERR_FLASH_WRITE: Final = 0x08
ERR_FLASH_READ: Final = 0x09
ERR_FLASH_READ_LENGTH: Final = 0x0A
ERR_DEFLATE: Final = 0x0B
ERR_RAM_SIZE: Final = 0x0E
ERR_RAM_ADDRESS: Final = 0x0F

SYNC_PAYLOAD: Final = b"\x07\x07\x12\x20" + b"\x55" * 32
SYNC_VALUE: Final = 0x20120707  # the value field of the ROM's SYNC answers
SYNC_ANSWERS: Final = 8  # the ROM answers one SYNC several times; esptool reads them all
CHECKSUM_SEED: Final = 0xEF
HEADER: Final = struct.Struct("<BBHI")
MAX_DATA_BLOCK: Final = 0x4000  # the largest _DATA payload accepted (esptool's ROM blocks are 0x400/0x1800)
MAX_FRAME: Final = HEADER.size + 16 + MAX_DATA_BLOCK  # a longer frame is cut off and refused


def slip_encode(payload: bytes) -> bytes:
    """``payload`` as one SLIP frame."""
    escaped = payload.replace(b"\xdb", b"\xdb\xdd").replace(b"\xc0", b"\xdb\xdc")
    return b"\xc0" + escaped + b"\xc0"


@dataclass(frozen=True)
class Oversize:
    """A frame that ran past ``MAX_FRAME``: its first bytes (the header, for the error answer)."""

    head: bytes


class SlipDecoder:
    """Turns a byte stream into frames. Bytes between frames are ignored (as the ROM ignores noise); a
    frame longer than ``max_frame`` is dropped up to its end and reported as ``Oversize``; a bad escape
    ends the frame it is in (the frame is dropped)."""

    def __init__(self, max_frame: int = MAX_FRAME) -> None:
        self.max_frame = max_frame
        self._frame: bytearray | None = None
        self._escape = False
        self._oversize: bytes | None = None
        self.dropped = 0  # frames dropped for a bad escape

    def reset(self) -> None:
        self._frame, self._escape, self._oversize = None, False, None

    def feed(self, data: bytes) -> list[bytes | Oversize]:
        out: list[bytes | Oversize] = []
        for b in data:
            if b == SLIP_END:
                if self._oversize is not None:
                    out.append(Oversize(self._oversize))
                elif self._frame:  # an empty frame (two ENDs in a row) opens the next one
                    out.append(bytes(self._frame))
                self._frame, self._escape, self._oversize = bytearray(), False, None
                continue
            if self._frame is None:
                continue  # noise outside a frame
            if self._oversize is not None:
                continue
            if self._escape:
                self._escape = False
                if b == SLIP_ESC_END:
                    b = SLIP_END
                elif b == SLIP_ESC_ESC:
                    b = SLIP_ESC
                else:
                    self.dropped += 1
                    self._frame = None  # wait for the next END
                    continue
            elif b == SLIP_ESC:
                self._escape = True
                continue
            self._frame.append(b)
            if len(self._frame) > self.max_frame:
                self._oversize = bytes(self._frame[: HEADER.size])
                self._frame = bytearray()
        return out


@dataclass(frozen=True)
class Command:
    op: int
    size: int  # the size field as sent (the loader checks it against ``len(data)``)
    checksum: int
    data: bytes


def parse_command(frame: bytes) -> Command | None:
    """A request packet, or None for anything else (a response, a packet shorter than its header)."""
    if len(frame) < HEADER.size or frame[0] != 0x00:
        return None
    _, op, size, checksum = HEADER.unpack_from(frame)
    return Command(op, size, checksum, frame[HEADER.size :])


def response(op: int, value: int = 0, payload: bytes = b"", error: int | None = None) -> bytes:
    """An ESP32 ROM response packet (not yet SLIP-framed): ``payload`` then the four status bytes,
    success unless ``error`` is given."""
    status = b"\x00\x00\x00\x00" if error is None else bytes((1, error, 0, 0))
    body = payload + status
    return HEADER.pack(0x01, op, len(body), value & 0xFFFFFFFF) + body


def checksum(data: bytes, seed: int = CHECKSUM_SEED) -> int:
    """The ROM's checksum of a _DATA block: the seed XOR every byte."""
    state = seed
    for b in data:
        state ^= b
    return state


def words(data: bytes, count: int) -> tuple[int, ...] | None:
    """The first ``count`` little-endian u32 words of ``data``, or None when it is shorter."""
    if len(data) < 4 * count:
        return None
    return struct.unpack_from(f"<{count}I", data)
