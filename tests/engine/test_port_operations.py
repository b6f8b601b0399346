"""Opening, reading, writing and closing through the engine: what the device sees and what the
results say (issue 27's engine-level layer)."""

from __future__ import annotations

import pytest

from serial_mcp.errors import ErrorCode, NotFound, SerialMcpError
from tests.engine.conftest import LISTED, PORT, Bench

pytestmark = pytest.mark.anyio


async def test_list_ports_gives_the_listers_ports_with_their_usb_identity(bench: Bench) -> None:
    listed = await bench.engine.list_ports()
    assert [(p.name, p.vid, p.pid, p.serial_number) for p in listed.ports] == [
        (LISTED.name, "0403", "6001", "A1")
    ]


async def test_open_applies_the_settings_and_status_reports_them(bench: Bench) -> None:
    conn = await bench.open(baud_rate=9600, parity="even")
    assert conn.opened.port == PORT and conn.opened.baud_rate == 9600
    applied = bench.device.settings_history[-1]
    assert (applied.baud_rate, applied.parity) == (9600, "even")
    status = await conn.get_status()
    assert status.state == "open" and status.settings["baud_rate"] == 9600
    listed = await bench.engine.list_connections()
    assert [c.connection_id for c in listed.connections] == [conn.id]


async def test_write_reaches_the_device_and_counts_the_bytes(bench: Bench) -> None:
    conn = await bench.open()
    wrote = await conn.write("hello\n")
    assert wrote.bytes_written == 6 and bytes(bench.device.written) == b"hello\n"
    wrote = await conn.write("00ff", encoding="hex")
    assert wrote.bytes_written == 2 and bytes(bench.device.written).endswith(b"\x00\xff")
    assert (await conn.get_status()).tx_bytes == 8


async def test_read_returns_what_the_device_sent_and_ends_on_a_match(bench: Bench) -> None:
    conn = await bench.open()
    bench.device.feed(b"boot\r\nready> ")
    read = await conn.read(match="ready>", timeout_ms=2000)
    assert read.matched and read.data == "boot\r\nready>" and read.stop_reason == "match"
    assert read.from_offset == 0 and read.next_offset == 12  # it ends where the match ends
    rest = await conn.read(timeout_ms=0)  # the cursor moved past what was read
    assert rest.data == " " and rest.from_offset == 12


async def test_read_from_an_offset_rereads_without_moving_other_readers(bench: Bench) -> None:
    conn = await bench.open()
    bench.device.feed(b"0123456789")
    first = await conn.read(max_bytes=4, timeout_ms=2000)
    again = await conn.read(from_=0, max_bytes=10, timeout_ms=0)
    rest = await conn.read(timeout_ms=0)
    assert (first.data, again.data, rest.data) == ("0123", "0123456789", "456789")


async def test_transact_sends_then_reads_the_reply(bench: Bench) -> None:
    conn = await bench.open()
    reply = await conn.transact("AT\r", match="OK", timeout_ms=2000)
    assert bytes(bench.device.written) == b"AT\r"
    assert reply.write.bytes_written == 3 and reply.read.matched and "OK" in reply.read.data


async def test_transact_steps_run_in_order_and_stop_at_the_first_that_fails(bench: Bench) -> None:
    conn = await bench.open()
    done = await conn.transact(
        steps=[
            {"send": "AT\r", "expect": "OK", "timeout_ms": 2000},
            {"send": "ATI\r", "expect": "FakeModem", "timeout_ms": 2000},
            {"send": "ATZ\r", "expect": "OK", "timeout_ms": 50},  # the modem stays silent
            {"send": "AT\r", "expect": "OK", "timeout_ms": 2000},  # never sent
        ]
    )
    assert done.steps is not None and [s.ok for s in done.steps] == [True, True, False]
    assert done.steps_ok is False and bytes(bench.device.written) == b"AT\rATI\rATZ\r"


async def test_flush_discards_what_was_received_and_not_read(bench: Bench) -> None:
    conn = await bench.open()
    bench.device.feed(b"stale bytes")
    await conn.read(max_bytes=1, timeout_ms=2000)  # the pump has them: one read, ten unread
    flushed = await conn.flush()
    assert flushed.bytes_discarded == 10
    bench.device.feed(b"fresh")
    assert (await conn.read(match="fresh", timeout_ms=2000)).data == "fresh"


async def test_close_ends_the_connection_and_a_later_call_is_not_found(bench: Bench) -> None:
    conn = await bench.open()
    await conn.write("x")
    closed = await conn.close()
    assert closed.tx_bytes == 1 and bench.device.closed
    assert (await bench.engine.list_connections()).connections == []
    with pytest.raises(NotFound) as caught:
        await conn.read(timeout_ms=0)
    assert caught.value.code == ErrorCode.CONNECTION_NOT_FOUND


async def test_opening_a_missing_port_is_a_port_error_and_opens_nothing(bench: Bench) -> None:
    with pytest.raises(SerialMcpError) as caught:
        await bench.engine.open("/dev/ttyNOPE")
    assert caught.value.code == ErrorCode.PORT_NOT_FOUND
    assert (await bench.engine.list_connections()).connections == []


async def test_reconnect_reopens_a_device_that_came_back(bench: Bench) -> None:
    conn = await bench.open()
    opens = bench.device.opens
    again = await conn.reconnect()
    assert again.state == "open" and bench.device.opens == opens + 1
    assert (await conn.transact("AT\r", match="OK", timeout_ms=2000)).read.matched
