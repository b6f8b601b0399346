"""The read algorithm and connection state over the in-memory fake opener."""

from __future__ import annotations

import asyncio

import pytest

from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import InvalidArgument, SerialMcpError
from serial_mcp.serial import reader
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.fake import FakeDevice, FakeOpener
from serial_mcp.serial.manager import ConnectionManager

pytestmark = pytest.mark.anyio


async def open_fake(responder=None, rx_buffer_size=None) -> tuple[ConnectionManager, Connection, FakeDevice]:  # type: ignore[no-untyped-def]
    opener = FakeOpener()
    dev = opener.add("fake0", responder)
    mgr = ConnectionManager(opener)
    conn = await mgr.open("fake0", rx_buffer_size=rx_buffer_size)
    return mgr, conn, dev


async def wait_for_end(conn: Connection, end: int) -> None:
    """Event-driven wait until the ring has seen ``end`` bytes."""
    async with asyncio.timeout(10):
        while (seen := conn.snapshot().end_offset) < end:
            await conn.wait_change(1.0, seen)


def req(**kw: object) -> reader.ReadRequest:
    return reader.build_read_request(**kw)  # type: ignore[arg-type]


async def test_history_is_checked_before_waiting() -> None:
    mgr, conn, dev = await open_fake()
    dev.feed(b"boot banner\r\nOK\r\n")
    await wait_for_end(conn, 17)
    out = await reader.read(conn, req(match="OK", timeout_ms=5000))
    assert out.stop_reason == "match"
    assert out.data == b"boot banner\r\nOK"  # everything up to and including the match
    assert out.match is not None and out.data[out.match.start : out.match.end] == b"OK"
    assert (out.from_offset, out.next_offset, out.buffered_remaining) == (0, 15, 2)
    await mgr.close_all()


async def test_match_split_across_chunks_while_waiting() -> None:
    mgr, conn, dev = await open_fake()

    async def trickle() -> None:
        for piece in (b"...O", b"K", b"\r\n"):
            await asyncio.sleep(0.01)
            dev.feed(piece)

    task = asyncio.create_task(trickle())
    out = await reader.read(conn, req(match="OK\r\n", timeout_ms=5000))
    await task
    assert out.stop_reason == "match" and out.data == b"...OK\r\n"
    await mgr.close_all()


async def test_plain_read_returns_on_idle_not_timeout() -> None:
    mgr, conn, dev = await open_fake()
    dev.feed(b"hello")
    out = await reader.read(conn, req(timeout_ms=60_000, idle_ms=20))
    assert out.stop_reason == "idle" and out.data == b"hello"
    await mgr.close_all()


async def test_timeout_with_nothing() -> None:
    mgr, conn, _ = await open_fake()
    out = await reader.read(conn, req(timeout_ms=30))
    assert (out.stop_reason, out.data) == ("timeout", b"")
    out = await reader.read(conn, req(timeout_ms=0))
    assert out.stop_reason == "timeout"
    await mgr.close_all()


async def test_max_bytes_stops_and_cursor_continues() -> None:
    mgr, conn, dev = await open_fake()
    dev.feed(b"0123456789")
    await wait_for_end(conn, 10)
    a = await reader.read(conn, req(max_bytes=4))
    b = await reader.read(conn, req(max_bytes=100, timeout_ms=0))
    assert (a.data, a.stop_reason, a.next_offset) == (b"0123", "max_bytes", 4)
    assert (b.data, b.from_offset) == (b"456789", 4)
    await mgr.close_all()


async def test_named_cursors_do_not_steal_bytes() -> None:
    mgr, conn, dev = await open_fake()
    dev.feed(b"shared data")
    await wait_for_end(conn, 11)
    a = await reader.read(conn, req(cursor="agent-a", timeout_ms=0))
    b = await reader.read(conn, req(cursor="agent-b", timeout_ms=0))
    d = await reader.read(conn, req(timeout_ms=0))
    assert a.data == b.data == d.data == b"shared data"
    again = await reader.read(conn, req(cursor="agent-a", timeout_ms=0))
    assert again.data == b""
    with pytest.raises(InvalidArgument):
        await reader.read(conn, req(cursor="bad name!", timeout_ms=0))
    await mgr.close_all()


async def test_from_variants_do_not_move_the_cursor() -> None:
    mgr, conn, dev = await open_fake()
    dev.feed(b"abcdef")
    await wait_for_end(conn, 6)
    assert (await reader.read(conn, req(from_=2, timeout_ms=0))).data == b"cdef"
    assert (await reader.read(conn, req(from_="buffer_start", timeout_ms=0))).data == b"abcdef"
    assert (await reader.read(conn, req(from_="now", timeout_ms=0))).data == b""
    assert (await reader.read(conn, req(timeout_ms=0))).data == b"abcdef"  # cursor untouched
    with pytest.raises(InvalidArgument):
        await reader.read(conn, req(from_=99, timeout_ms=0))
    await mgr.close_all()


async def test_overflow_reports_exact_loss() -> None:
    mgr, conn, dev = await open_fake(rx_buffer_size=1024)
    stream = bytes(i % 253 for i in range(5000))
    for i in range(0, 5000, 700):
        dev.feed(stream[i : i + 700])
    await wait_for_end(conn, 5000)
    out = await reader.read(conn, req(timeout_ms=0, max_bytes=10_000, encoding="hex"))
    assert out.bytes_lost == 5000 - 1024
    assert out.data == stream[out.from_offset :]
    assert len(out.data) + out.bytes_lost == 5000
    assert conn.bytes_lost_total == out.bytes_lost
    await mgr.close_all()


async def test_utf8_read_does_not_tear_a_character() -> None:
    mgr, conn, dev = await open_fake()
    euro = "€".encode()
    dev.feed(b"price " + euro[:2])
    first = await reader.read(conn, req(idle_ms=10, timeout_ms=2000))
    dev.feed(euro[2:] + b"!")
    await wait_for_end(conn, 10)
    second = await reader.read(conn, req(idle_ms=10, timeout_ms=2000))
    assert first.data == b"price " and (second.data.decode() == "€!")
    await mgr.close_all()


async def test_unplug_wakes_a_waiting_read_promptly() -> None:
    mgr, conn, dev = await open_fake()

    async def unplug() -> None:
        await asyncio.sleep(0.02)
        dev.unplug()

    task = asyncio.create_task(unplug())
    out = await reader.read(conn, req(match="never", timeout_ms=600_000))
    await task
    assert out.stop_reason == "disconnected"
    assert conn.state == "disconnected" and "Input/output error" in (conn.last_error or "")
    assert not conn.pump_alive
    # a later read returns at once with the same reason, and what was buffered is still readable
    again = await reader.read(conn, req(timeout_ms=600_000))
    assert again.stop_reason == "disconnected"
    await mgr.close_all()


async def test_closed_connection_refuses_reads() -> None:
    mgr, conn, _ = await open_fake()
    await mgr.close(conn.id)
    with pytest.raises(SerialMcpError) as exc:
        await reader.read(conn, req(timeout_ms=0))
    assert exc.value.code == "connection_closed"
    with pytest.raises(SerialMcpError) as exc:
        mgr.get(conn.id)
    assert exc.value.code == "connection_not_found"


async def test_one_connection_per_port_and_missing_port() -> None:
    mgr, conn, _ = await open_fake()
    with pytest.raises(SerialMcpError) as exc:
        await mgr.open("fake0")
    assert exc.value.code == "port_busy" and conn.id in exc.value.message
    with pytest.raises(SerialMcpError) as exc:
        await mgr.open("nope")
    assert exc.value.code == "port_not_found"
    await mgr.close_all()


@pytest.mark.parametrize(
    "kw",
    [
        {"from_": "later"},
        {"from_": -1},
        {"timeout_ms": -5},
        {"idle_ms": 0},
        {"max_bytes": 0},
        {"encoding": "latin1"},
        {"match": {"pattern": "(", "mode": "regex"}},
    ],
)
def test_read_arguments_are_validated(kw: dict[str, object]) -> None:
    with pytest.raises(InvalidArgument):
        reader.build_read_request(**kw)  # type: ignore[arg-type]


async def test_fields_change_by_named_operations_only() -> None:
    """Issue 41.3: owner, share, settings, dtr, rts and the mirrors are read in public and changed
    through the connection's named operations; a plain assignment is refused."""
    mgr, conn, _dev = await open_fake()
    try:
        with pytest.raises(AttributeError, match="named operation"):
            conn.owner = "someone"  # type: ignore[assignment]
        conn.hold_for("caller-1", "write")
        conn.hold_for("caller-2")  # the share stays
        conn.lines.levels_set(dtr=True)
        conn.lines.levels_set(rts=False)
        new = SerialSettings(baud_rate=9600)
        conn.use_settings(new)
        assert (conn.owner, conn.share, conn.settings) == ("caller-2", "write", new)
        assert (conn.lines.dtr, conn.lines.rts) == (True, False)
        assert conn.log.tail(1)[0].type == "config"
    finally:
        await mgr.close_all()


async def test_the_lines_part_controls_the_reopened_port() -> None:
    """Issue 41.3: the lines are a part of the connection (``conn.lines``); a reopen hands it the new handle."""
    mgr, conn, _dev = await open_fake()
    try:
        first = conn.handle
        await conn.reconnect_now()
        assert conn.handle is not first
        levels: list[bool] = []
        conn.handle.set_dtr = levels.append  # type: ignore[assignment]
        conn.lines.set_blocking(True, None)
        conn.lines.levels_set(dtr=True)
        assert levels == [True] and conn.lines.dtr is True
    finally:
        await mgr.close_all()
