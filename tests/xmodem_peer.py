"""A device that sends one file over XMODEM-CRC when a receiver asks: a ``FakeDevice`` responder."""

from __future__ import annotations

from collections.abc import Callable

from serial_mcp.core.checksums import compute

SOH, EOT, ACK, NAK, CRC_REQUEST = b"\x01", b"\x04", b"\x06", b"\x15", b"C"


def xmodem_crc_sender(data: bytes) -> Callable[[bytes], bytes | None]:
    """Answers the receiver's C with ``data`` as one 128-byte block (padded with SUB), its ACK with
    EOT, a NAK of that EOT with EOT again, and then nothing."""
    if len(data) > 128:
        raise ValueError("one block: at most 128 bytes")
    payload = data.ljust(128, b"\x1a")
    block = SOH + b"\x01\xfe" + payload + compute("crc16_xmodem", payload).to_bytes(2, "big")
    acks = 0

    def respond(written: bytes) -> bytes | None:
        nonlocal acks
        if written == CRC_REQUEST:
            return block
        if written == ACK:  # of the block, then of the EOT
            acks += 1
            return EOT if acks == 1 else None
        return EOT if written == NAK else None

    return respond
