"""run_transfer over a fake port: a peer that goes away mid-transfer is reported as gone, not as a
cancel from this side (issue 15)."""

from __future__ import annotations

import anyio
import pytest

from serial_mcp import messages
from serial_mcp.core.reconnect import ReconnectPolicy
from serial_mcp.core.xmodem import XmodemReceiver, XmodemSender
from serial_mcp.core.xmodem_wire import ACK
from serial_mcp.serial.fake import FakeDevice, FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.transfer import run_transfer

pytestmark = pytest.mark.anyio

FIRMWARE = bytes(range(256)) * 8  # 16 blocks of 128 bytes


def ack_then_vanish(dev: FakeDevice, acks: int) -> None:
    """The receiving side ACKs ``acks`` blocks, then its port disappears (EIO on the next read)."""
    seen: list[bytes] = []

    def responder(data: bytes) -> bytes | None:
        seen.append(data)
        if len(seen) <= acks:
            return bytes([ACK])
        dev.unplug()
        return None

    dev.responder = responder


@pytest.mark.parametrize("reconnect", [False, True])
async def test_a_sender_whose_receiver_vanishes_says_the_peer_went_away(reconnect: bool) -> None:
    opener = FakeOpener()
    dev = opener.add("board")
    manager = ConnectionManager(opener)
    policy = ReconnectPolicy(max_attempts=0, initial_delay_ms=10, max_delay_ms=10) if reconnect else None
    conn = await manager.open("board", reconnect=policy)
    try:
        ack_then_vanish(dev, acks=3)
        dev.feed(b"C")
        with anyio.fail_after(60):  # a guard against a hang, not a measurement
            result = await run_transfer(conn, XmodemSender(FIRMWARE, "crc"))
    finally:
        await manager.close_all()
    assert not result.ok and not result.cancelled and result.cancelled_by is None
    assert result.blocks == 3 and result.bytes == 3 * 128
    assert result.error == messages.XMODEM_PEER_GONE.format(blocks=3)
    assert "cancelled here" not in result.error
    assert bytes([0x18, 0x18]) not in bytes(dev.written)  # nothing was sent into the void


async def test_a_receiver_whose_sender_vanishes_says_the_peer_went_away() -> None:
    opener = FakeOpener()
    dev = opener.add("board")
    manager = ConnectionManager(opener)
    conn = await manager.open("board")
    try:

        def vanish_on_request(data: bytes) -> bytes | None:
            if data == b"C":  # the receiver's start request reaches a sender that has just left
                dev.unplug()
            return None

        dev.responder = vanish_on_request
        with anyio.fail_after(60):  # a guard against a hang, not a measurement
            result = await run_transfer(conn, XmodemReceiver("crc"))
    finally:
        await manager.close_all()
    assert not result.ok and not result.cancelled
    assert result.error == messages.XMODEM_PEER_GONE.format(blocks=0)
