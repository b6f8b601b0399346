"""XMODEM/YMODEM on the wire: control bytes, limits and timeouts from the specifications, blocks
and the YMODEM block 0 header, and the events and results the machines report.

Shared by the sender (``core.xmodem_sender``) and receiver (``core.xmodem_receiver``) machines;
``core.xmodem`` describes the protocol and the decisions taken where the specifications leave room.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from serial_mcp import messages
from serial_mcp.core.checksums import compute
from serial_mcp.errors import InvalidArgument

SOH: Final = 0x01
STX: Final = 0x02
EOT: Final = 0x04
ACK: Final = 0x06
BS: Final = 0x08
NAK: Final = 0x15
CAN: Final = 0x18
PAD: Final = 0x1A
CRC_REQUEST: Final = 0x43  # "C"

#: What cancel() sends: five CAN, then five backspaces to erase them from a shell's input
#: line in case the peer had already left the transfer (Forsberg, "Graceful Abort").
ABORT_SEQUENCE: Final = bytes([CAN] * 5 + [BS] * 5)

#: Per-block retry limit (Christensen: "All errors are retried 10 times").
MAX_RETRIES: Final = 10
#: Seconds a receiver waits for a block before it NAKs again (Christensen).
BLOCK_TIMEOUT: Final = 10.0
#: Seconds a sender waits for an answer to a block before it sends it again: longer than the
#: receiver's BLOCK_TIMEOUT, so a live receiver's NAK drives retries (Christensen suggests a
#: receiver-driven protocol) and the sender's timer only matters when the receiver is mute.
SENDER_TIMEOUT: Final = 15.0
#: Seconds between a receiver's ``C`` requests before it falls back to NAK (Byrns).
CRC_REQUEST_TIMEOUT: Final = 3.0
#: Seconds a receiver waits for the rest of a block once it started (Christensen).
CHARACTER_TIMEOUT: Final = 1.0
#: Unanswered ``C`` requests before an XMODEM receiver falls back to checksum mode.
CRC_ATTEMPTS: Final = 3
#: A sender waits this many timeouts (of BLOCK_TIMEOUT) for the receiver's first request.
SENDER_START_RETRIES: Final = 6
#: A receiver sends this many start requests (C or NAK) before giving up.
RECEIVER_START_RETRIES: Final = 20

Mode = Literal["checksum", "crc", "1k"]
MODES: Final = ("checksum", "crc", "1k")


# --- events and results ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TransferredFile:
    """One file of a transfer: ``data`` is filled on the receiving side only."""

    name: str | None
    size: int
    data: bytes = b""
    declared_size: int | None = None
    mtime: int | None = None
    mode: int | None = None


@dataclass(frozen=True, slots=True)
class TransferResult:
    """How a transfer ended: ``bytes`` of file data and data ``blocks`` that got through."""

    ok: bool
    bytes: int
    blocks: int
    retries: int
    cancelled: bool = False
    cancelled_by: Literal["local", "peer"] | None = None
    error: str | None = None
    files: tuple[TransferredFile, ...] = ()


@dataclass(frozen=True, slots=True)
class Progress:
    """A data block was acknowledged (sender) or accepted (receiver).

    ``block`` counts this file's data blocks; ``blocks`` is their total where known (the
    sender knows, a receiver does not: block sizes may change). ``bytes`` counts file data,
    without padding where the size is known.
    """

    file: str | None
    block: int
    blocks: int | None
    bytes: int
    total_bytes: int | None


@dataclass(frozen=True, slots=True)
class Retry:
    """A block (0 is a YMODEM header, -1 the EOT) was rejected or sent again, and why."""

    block: int
    reason: str
    attempt: int


@dataclass(frozen=True, slots=True)
class FileStarted:
    """A YMODEM file's block 0 was acknowledged."""

    name: str
    size: int | None
    mtime: int | None = None
    mode: int | None = None


@dataclass(frozen=True, slots=True)
class FileSent:
    """The receiver acknowledged the end of a file."""

    name: str | None
    size: int


@dataclass(frozen=True, slots=True)
class FileReceived:
    """A whole file arrived (padding removed where the size is known)."""

    file: TransferredFile


@dataclass(frozen=True, slots=True)
class Done:
    """The transfer is over, successfully or not; no more output follows except for cancel."""

    result: TransferResult


Event = Progress | Retry | FileStarted | FileSent | FileReceived | Done


# --- blocks ---------------------------------------------------------------------------------------


def block_check(payload: bytes, crc: bool) -> bytes:
    """The block check: CRC-16/XMODEM high byte first, or the 8-bit arithmetic sum."""
    if crc:
        return compute("crc16_xmodem", payload).to_bytes(2, "big")
    return bytes([sum(payload) & 0xFF])


def encode_block(number: int, payload: bytes, *, crc: bool, size: int = 128, pad: int = PAD) -> bytes:
    """One block on the wire: SOH/STX, number, its complement, ``payload`` padded to ``size``, check."""
    body = payload.ljust(size, bytes([pad]))
    number &= 0xFF
    return bytes([SOH if size == 128 else STX, number, 0xFF - number]) + body + block_check(body, crc)


def header_payload(file: YmodemFile) -> bytes:
    """YMODEM block 0 contents: ``name NUL size [mtime [mode]]`` (octal fields), NUL-padded."""
    fields = [str(len(file.data))]
    if file.mtime is not None or file.mode is not None:
        fields.append(format(file.mtime or 0, "o"))
    if file.mode is not None:
        fields.append(format(file.mode, "o"))
    return file.name.encode("utf-8") + b"\x00" + " ".join(fields).encode("ascii")


def parse_header(payload: bytes) -> TransferredFile | None:
    """The file described by a YMODEM block 0, or None for the empty name that ends a batch.

    Only the name is required; size, mtime and mode are read leniently (a field that does
    not parse is left out, as are the ones after it).
    """
    name, _, rest = payload.partition(b"\x00")
    if not name:
        return None
    fields = rest.split(b"\x00", 1)[0].split()
    values: list[int] = []
    for base, field in zip((10, 8, 8), fields, strict=False):
        try:
            values.append(int(field, base))
        except ValueError:
            break
    size, mtime, mode = (*values, None, None, None)[:3]
    text = name.decode("utf-8", errors="replace")
    return TransferredFile(text, 0, b"", size, mtime, mode)


@dataclass(frozen=True, slots=True)
class YmodemFile:
    """A file for :class:`YmodemSender`: its name (no directory needed), contents and metadata."""

    name: str
    data: bytes
    mtime: int | None = None
    mode: int | None = None


def check_mode(mode: str) -> None:
    if mode not in MODES:
        text = messages.XMODEM_BAD_MODE.format(value=mode, allowed=", ".join(MODES))
        raise InvalidArgument(text, mode=mode)


def check_retries(field: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument(messages.XMODEM_BAD_RETRIES.format(field=field, value=value))
