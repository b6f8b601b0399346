"""The real serial path: PTY pairs, the production opener, the pump thread and the read algorithm."""

from __future__ import annotations

import asyncio
import random
import threading

import pytest

from serial_mcp.errors import SerialMcpError
from serial_mcp.serial import reader
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.manager import ConnectionManager
from tests.pty.devices import AtResponder, PtyDevice, echo

pytestmark = pytest.mark.anyio


def req(**kw: object) -> reader.ReadRequest:
    return reader.build_read_request(**kw)  # type: ignore[arg-type]


async def wait_for_end(conn: Connection, end: int, limit: float = 60) -> None:
    async with asyncio.timeout(limit):
        while (seen := conn.snapshot().end_offset) < end:
            await conn.wait_change(1.0, seen)


async def test_round_trip_and_replay_from_buffer_start(
    manager: ConnectionManager, pty_factory: list[PtyDevice]
) -> None:
    dev = PtyDevice(echo).start()
    pty_factory.append(dev)
    conn = await manager.open(dev.path)
    await conn.tx.write(b"hello pty\n")
    out = await reader.read(conn, req(match="\n", timeout_ms=5000))
    assert out.data == b"hello pty\n" and out.stop_reason == "match"
    await conn.tx.write(b"second\n")
    out2 = await reader.read(conn, req(match="\n", timeout_ms=5000))
    assert out2.from_offset == out.next_offset and out2.data == b"second\n"
    replay = await reader.read(conn, req(from_="buffer_start", timeout_ms=0))
    assert replay.data == b"hello pty\nsecond\n"
    assert bytes(dev.received) == b"hello pty\nsecond\n"


async def test_named_cursors_each_see_everything(
    manager: ConnectionManager, pty_factory: list[PtyDevice]
) -> None:
    dev = PtyDevice().start()
    pty_factory.append(dev)
    conn = await manager.open(dev.path)
    dev.send(b"line one\r\nline two\r\n")
    await wait_for_end(conn, 20)
    got = {}
    for name in ("default", "watcher", "logger"):
        got[name] = (await reader.read(conn, req(cursor=name, timeout_ms=0))).data
    assert set(got.values()) == {b"line one\r\nline two\r\n"}


async def test_transact_never_misses_a_fast_reply(
    manager: ConnectionManager, pty_factory: list[PtyDevice]
) -> None:
    at = AtResponder()
    dev = PtyDevice(at).start()
    pty_factory.append(dev)
    conn = await manager.open(dev.path)
    dev.send(b"+URC: backlog the reply must not include\r\n")
    await wait_for_end(conn, 42)
    for i in range(100):
        payload = f"AT+ECHO={i}\r".encode()
        r = req(match="OK\r\n", timeout_ms=5000)
        async with conn.tx.turn():
            mark = conn.snapshot().end_offset
            await conn.tx.write_locked(payload)
            out = await reader.read(conn, r, start=mark)
        assert out.stop_reason == "match", (i, out)
        assert out.data == f"\r\n{i}\r\nOK\r\n".encode()
        assert out.from_offset == mark
    assert len(at.commands) == 100


async def test_flood_with_a_slow_reader_accounts_every_byte(
    manager: ConnectionManager, pty_factory: list[PtyDevice]
) -> None:
    """Several MiB into a 64 KiB ring while a reader takes small bites: received + lost == sent, by offset."""
    dev = PtyDevice().start()
    pty_factory.append(dev)
    conn = await manager.open(dev.path, rx_buffer_size=64 * 1024)
    sent = random.Random(7).randbytes(4 * 1024 * 1024)
    writer = threading.Thread(target=dev.send, args=(sent,), daemon=True)
    writer.start()
    received = 0
    lost = 0
    pos = 0
    async with asyncio.timeout(120):
        while pos < len(sent):
            out = await reader.read(conn, req(max_bytes=4096, timeout_ms=2000, encoding="hex"))
            assert out.from_offset == pos + out.bytes_lost, (
                "a read must start where the last one ended, plus the gap"
            )
            assert out.data == sent[out.from_offset : out.next_offset], "content checked by absolute offset"
            received += len(out.data)
            lost += out.bytes_lost
            pos = out.next_offset
    writer.join(10)
    assert received + lost == len(sent)
    assert conn.bytes_lost_total == lost


async def test_flood_into_an_unread_ring_keeps_the_newest(
    manager: ConnectionManager, pty_factory: list[PtyDevice]
) -> None:
    dev = PtyDevice().start()
    pty_factory.append(dev)
    conn = await manager.open(dev.path, rx_buffer_size=64 * 1024)
    sent = random.Random(11).randbytes(3 * 1024 * 1024)
    writer = threading.Thread(target=dev.send, args=(sent,), daemon=True)
    writer.start()
    await wait_for_end(conn, len(sent), limit=120)
    writer.join(10)
    out = await reader.read(conn, req(max_bytes=1024 * 1024, timeout_ms=0, encoding="hex"))
    assert out.bytes_lost == len(sent) - 64 * 1024
    assert out.data == sent[-64 * 1024 :]
    assert conn.snapshot().end_offset == len(sent)


async def test_unplug_during_idle_read(manager: ConnectionManager, pty_factory: list[PtyDevice]) -> None:
    dev = PtyDevice().start()
    pty_factory.append(dev)
    conn = await manager.open(dev.path)
    dev.send(b"last words\r\n")
    await wait_for_end(conn, 12)
    loop = asyncio.get_running_loop()
    loop.call_later(0.05, dev.unplug)
    first = await reader.read(conn, req(match="never", timeout_ms=600_000))
    # the buffered bytes come back, then the reason
    assert first.data == b"last words\r\n"
    assert first.stop_reason == "disconnected"
    assert conn.state == "disconnected" and conn.last_error
    assert not conn.pump_alive
    with pytest.raises(SerialMcpError) as exc:
        await manager.open(dev.path)
    assert exc.value.code == "port_busy"  # still registered until closed; the message says so
    await manager.close(conn.id)


async def test_write_after_unplug_is_refused_cleanly(
    manager: ConnectionManager, pty_factory: list[PtyDevice]
) -> None:
    dev = PtyDevice().start()
    pty_factory.append(dev)
    conn = await manager.open(dev.path)
    dev.unplug()
    out = await reader.read(conn, req(timeout_ms=10_000, match="x"))
    assert out.stop_reason == "disconnected"


async def test_missing_and_busy_ports(manager: ConnectionManager, pty_factory: list[PtyDevice]) -> None:
    with pytest.raises(SerialMcpError) as exc:
        await manager.open("/dev/does-not-exist-serial")
    assert exc.value.code == "port_not_found"
    dev = PtyDevice().start()
    pty_factory.append(dev)
    await manager.open(dev.path)
    other = ConnectionManager(
        __import__("serial_mcp.serial.system_open", fromlist=["SystemOpener"]).SystemOpener()
    )
    with pytest.raises(SerialMcpError) as exc:
        await other.open(dev.path)  # a second manager = another program: the exclusive lock refuses it
    assert exc.value.code == "port_busy"


async def test_close_is_prompt_and_releases_the_port(
    manager: ConnectionManager, pty_factory: list[PtyDevice]
) -> None:
    dev = PtyDevice().start()
    pty_factory.append(dev)
    conn = await manager.open(dev.path)
    waiting = asyncio.create_task(reader.read(conn, req(match="never", timeout_ms=600_000)))
    await asyncio.sleep(0.02)
    await manager.close(conn.id)
    out = await asyncio.wait_for(waiting, 10)
    assert out.stop_reason == "closed"
    assert not conn.pump_alive
    again = await manager.open(dev.path)  # the exclusive lock was released
    assert again.state == "open"
