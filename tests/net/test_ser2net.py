"""rfc2217:// and socket:// against a real ser2net bridging a simulated device on a PTY.

The engine is driven through ``ConnectionManager(SystemOpener())`` and the MCP tools in-process, so
the production path is what is tested. What ser2net 4.3 does with line control, as observed here:
it confirms baud rate, data size, parity, stop size, purge and the flow-control SET_CONTROL, and
applies them to the tty; it never confirms DTR/RTS for a PTY (no modem lines), so pyserial's
``rfc2217://`` open only succeeds with ``?ign_set_control``.
"""

from __future__ import annotations

import asyncio
import random
import termios
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from mcp import Client

from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import SerialMcpError
from serial_mcp.mcp.server import build_server
from serial_mcp.serial import reader
from serial_mcp.serial.connection import Connection, State
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.system_open import SystemOpener
from tests.net.conftest import Ser2Net
from tests.pty.devices import AtResponder, Handler, echo
from tests.tool_calls import full

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

Start = Callable[[Handler | None], Ser2Net]
# rfc2217 needs ign_set_control against ser2net + PTY (see the module docstring and test below)
SCHEMES = [
    pytest.param(("rfc2217", "ign_set_control"), id="rfc2217"),
    pytest.param(("socket", ""), id="socket"),
]
LIMIT = 60  # seconds: a hang fails the test instead of stalling the run (not a timing assertion)


def req(**kw: object) -> reader.ReadRequest:
    return reader.build_read_request(**kw)  # type: ignore[arg-type]


async def wait_for_end(conn: Connection, end: int, limit: float = LIMIT) -> None:
    async with asyncio.timeout(limit):
        while (seen := conn.snapshot().end_offset) < end:
            await conn.wait_change(1.0, seen)


async def wait_for_state(conn: Connection, reached: Callable[[State], bool]) -> None:
    """Wait (bounded) until ``reached(conn.state)``; the state is read afresh each time it changes."""
    async with asyncio.timeout(LIMIT):
        while not reached(conn.state):
            await conn.wait_change(1.0)


def tty_speed(bridge: Ser2Net) -> int:
    """The speed ser2net actually set on the tty (the PTY's termios, seen from the device side)."""
    return int(termios.tcgetattr(bridge.device.master)[5])


class Counting:
    """A device handler that wakes a waiter once ``n`` bytes have arrived (no polling)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.seen = 0
        self.done = threading.Event()

    def __call__(self, data: bytes) -> bytes | None:
        self.seen += len(data)
        if self.seen >= self.n:
            self.done.set()
        return None


# --- engine: ConnectionManager(SystemOpener()) ---------------------------------------------------


@pytest.mark.parametrize("scheme", SCHEMES)
async def test_round_trip(
    manager: ConnectionManager, ser2net_factory: Start, scheme: tuple[str, str]
) -> None:
    bridge = ser2net_factory(echo)
    conn = await manager.open(bridge.url(*scheme))
    assert conn.state == "open"
    await conn.tx.write(b"hello over the network\n")
    out = await reader.read(conn, req(match="\n", timeout_ms=10_000))
    assert out.data == b"hello over the network\n" and out.stop_reason == "match"
    await conn.tx.write(b"second\n")
    out2 = await reader.read(conn, req(match="\n", timeout_ms=10_000))
    assert out2.from_offset == out.next_offset and out2.data == b"second\n"
    replay = await reader.read(conn, req(from_="buffer_start", timeout_ms=0))
    assert replay.data == b"hello over the network\nsecond\n"
    assert bytes(bridge.device.received) == b"hello over the network\nsecond\n"


@pytest.mark.parametrize("scheme", SCHEMES)
async def test_transact_never_misses_a_reply(
    manager: ConnectionManager, ser2net_factory: Start, scheme: tuple[str, str]
) -> None:
    at = AtResponder()
    bridge = ser2net_factory(at)
    conn = await manager.open(bridge.url(*scheme))
    bridge.device.send(b"+URC: backlog the reply must not include\r\n")
    await wait_for_end(conn, 42)
    for i in range(50):
        async with conn.tx.turn():
            mark = conn.snapshot().end_offset
            await conn.tx.write_locked(f"AT+ECHO={i}\r".encode())
            out = await reader.read(conn, req(match="OK\r\n", timeout_ms=10_000), start=mark)
        assert out.stop_reason == "match", (i, out)
        assert out.data == f"\r\n{i}\r\nOK\r\n".encode() and out.from_offset == mark
    assert len(at.commands) == 50


@pytest.mark.parametrize("scheme", SCHEMES)
async def test_flood_device_to_host_byte_exact(
    manager: ConnectionManager, ser2net_factory: Start, scheme: tuple[str, str]
) -> None:
    """1 MiB of random bytes (0xFF included: telnet's IAC must be unescaped) arrives whole, by offset."""
    bridge = ser2net_factory(None)
    conn = await manager.open(bridge.url(*scheme), rx_buffer_size=2 * 1024 * 1024)
    sent = random.Random(2217).randbytes(1024 * 1024)
    assert sent.count(0xFF) > 1000
    writer = threading.Thread(target=bridge.device.send, args=(sent,), daemon=True)
    writer.start()
    pos = 0
    async with asyncio.timeout(120):
        while pos < len(sent):
            out = await reader.read(conn, req(max_bytes=65536, timeout_ms=10_000, encoding="hex"))
            assert out.bytes_lost == 0 and out.from_offset == pos
            assert out.data == sent[out.from_offset : out.next_offset], "content checked by absolute offset"
            assert out.stop_reason != "disconnected", out
            pos = out.next_offset
    writer.join(10)
    assert pos == len(sent) == conn.snapshot().end_offset
    assert conn.bytes_lost_total == 0


@pytest.mark.parametrize("scheme", SCHEMES)
async def test_flood_host_to_device_byte_exact(
    manager: ConnectionManager, ser2net_factory: Start, scheme: tuple[str, str]
) -> None:
    sent = random.Random(4001).randbytes(1024 * 1024)
    counter = Counting(len(sent))
    bridge = ser2net_factory(counter)
    conn = await manager.open(bridge.url(*scheme))
    for i in range(0, len(sent), 64 * 1024):
        await conn.tx.write(sent[i : i + 64 * 1024])
    assert await asyncio.to_thread(counter.done.wait, 120)
    assert bytes(bridge.device.received) == sent


@pytest.mark.parametrize("scheme", SCHEMES)
async def test_killing_ser2net_disconnects_a_waiting_read(
    manager: ConnectionManager, ser2net_factory: Start, scheme: tuple[str, str]
) -> None:
    bridge = ser2net_factory(None)
    conn = await manager.open(bridge.url(*scheme))
    bridge.device.send(b"last words\r\n")
    await wait_for_end(conn, 12)
    asyncio.get_running_loop().call_later(0.05, bridge.kill)
    async with asyncio.timeout(LIMIT):  # the read's own timeout is 10 minutes: only EOF can end it
        out = await reader.read(conn, req(match="never", timeout_ms=600_000))
    assert out.data == b"last words\r\n"
    assert out.stop_reason == "disconnected"
    assert conn.state == "disconnected" and conn.last_error
    assert not conn.pump_alive


@pytest.mark.parametrize("scheme", SCHEMES)
async def test_device_unplugged_behind_ser2net_disconnects(
    manager: ConnectionManager, ser2net_factory: Start, scheme: tuple[str, str]
) -> None:
    """The PTY (the 'USB adapter') goes away while ser2net keeps running: ser2net drops the TCP
    connection, and the product sees it as a disconnect, not as an idle line."""
    bridge = ser2net_factory(None)
    conn = await manager.open(bridge.url(*scheme))
    bridge.device.send(b"booting\r\n")
    await wait_for_end(conn, 9)
    asyncio.get_running_loop().call_later(0.05, bridge.device.unplug)
    async with asyncio.timeout(LIMIT):
        out = await reader.read(conn, req(match="never", timeout_ms=600_000))
    assert out.data == b"booting\r\n" and out.stop_reason == "disconnected"
    assert conn.state == "disconnected" and conn.last_error


async def test_rfc2217_without_ign_set_control_fails_with_the_way_out(
    manager: ConnectionManager, ser2net_factory: Start
) -> None:
    """ser2net never confirms DTR/RTS for a PTY; pyserial waits for it at open. The error names the fix."""
    bridge = ser2net_factory(echo)
    url = bridge.url("rfc2217", "timeout=1")  # pyserial's negotiation timeout, to fail in 1 s, not 3
    with pytest.raises(SerialMcpError) as exc:
        await manager.open(url)
    assert exc.value.code == "port_open_failed"
    assert "waiting for option 'control'" in exc.value.message
    assert f"{url}&ign_set_control" in exc.value.message
    assert manager.list() == []
    conn = await manager.open(f"{url}&ign_set_control")  # the advice works, on the same server
    await conn.tx.write(b"ok\n")
    assert (await reader.read(conn, req(match="\n", timeout_ms=10_000))).data == b"ok\n"


async def test_rfc2217_settings_are_confirmed_and_reach_the_tty(
    manager: ConnectionManager, ser2net_factory: Start
) -> None:
    """The baud rate and stop bits travel over RFC 2217; ser2net confirms them and sets the tty.

    (Data bits and parity are confirmed too, but a Linux PTY keeps CS8 without parity, so the
    device side cannot show them; a real UART would.)
    """
    bridge = ser2net_factory(echo)
    assert tty_speed(bridge) != termios.B57600
    conn = await manager.open(bridge.url("rfc2217", "ign_set_control"), SerialSettings(baud_rate=57600))
    assert tty_speed(bridge) == termios.B57600, "the open's baud rate reached the device side"
    assert not termios.tcgetattr(bridge.device.master)[2] & termios.CSTOPB
    await asyncio.to_thread(conn.handle.apply_settings, conn.settings.updated(baud_rate=9600, stop_bits=2))
    attrs = termios.tcgetattr(bridge.device.master)
    assert attrs[5] == termios.B9600 and attrs[2] & termios.CSTOPB
    await conn.tx.write(b"still talking\n")
    assert (await reader.read(conn, req(match="\n", timeout_ms=10_000))).data == b"still talking\n"


def test_unconfirmed_line_change_on_an_open_port_is_an_io_error_with_the_way_out() -> None:
    """set_dtr on an rfc2217 port opened without ign_set_control, whose server stops answering:
    an OSError the tools report as io_error (not an internal error), naming the fix."""
    import serial

    class SilentServer:
        timeout = 0.25

        def fileno(self) -> int:
            raise OSError("no descriptor")

        def __setattr__(self, name: str, value: object) -> None:
            if name == "dtr":
                raise serial.SerialException("timeout while waiting for option 'control'")
            object.__setattr__(self, name, value)

        def close(self) -> None:
            pass

    from serial_mcp.serial.system import SystemPortHandle

    handle = SystemPortHandle("rfc2217://bench-3:4001", SilentServer())
    try:
        with pytest.raises(OSError) as exc:
            handle.set_dtr(False)
        assert "rfc2217://bench-3:4001?ign_set_control" in str(exc.value)
    finally:
        handle.close()


# --- MCP tools in-process ------------------------------------------------------------------------


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    async with Client(build_server(ConnectionManager(SystemOpener()))) as c:
        yield c


async def call(c: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    r = await c.call_tool(name, args)
    assert not r.is_error, r.content
    assert isinstance(r.structured_content, dict), r.structured_content
    return full(name, r.structured_content)  # lean results (issue 26) read back whole


@pytest.mark.parametrize("scheme", SCHEMES)
async def test_mcp_tools_over_ser2net(
    client: Client, ser2net_factory: Start, scheme: tuple[str, str]
) -> None:
    bridge = ser2net_factory(AtResponder())
    url = bridge.url(*scheme)
    opened = await call(client, "open", {"port": url, "baud_rate": 115200})
    cid = opened["connection_id"]
    assert opened["port"] == url and opened["state"] == "open"
    tx = await call(
        client,
        "transact",
        {"connection_id": cid, "data": "AT+ECHO=net\r", "match": "OK\r\n", "timeout_ms": 10_000},
    )
    assert tx["read"]["stop_reason"] == "match" and tx["read"]["data"] == "\r\nnet\r\nOK\r\n"
    w = await call(client, "write", {"connection_id": cid, "data": "41 54 0d", "encoding": "hex"})
    assert w["bytes_written"] == 3
    r = await call(client, "read", {"connection_id": cid, "match": "OK\r\n", "timeout_ms": 10_000})
    assert r["data"] == "\r\nOK\r\n"
    if scheme[0] == "socket":  # a raw socket has no lines: said so, never a silent success
        refused = await client.call_tool("set_dtr_rts", {"connection_id": cid, "dtr": False, "rts": False})
        assert refused.is_error and refused.structured_content is not None
        assert refused.structured_content["error"]["code"] == "not_supported"
    else:
        lines = await call(client, "set_dtr_rts", {"connection_id": cid, "dtr": False, "rts": False})
        assert lines["dtr"] is False and lines["rts"] is False  # sent; ser2net does not confirm them (PTY)
    status = await call(client, "get_status", {"connection_id": cid})
    assert status["state"] == "open"
    if scheme[0] == "socket":
        assert status["dtr"] is None, "nothing was changed"
        assert {status[k] for k in ("cts", "dsr", "ri", "cd")} == {None}, "a raw socket has no lines"
    else:  # what ser2net reported in NOTIFY_MODEMSTATE for a PTY: all inactive
        assert status["dtr"] is False
        assert {status[k] for k in ("cts", "dsr", "ri", "cd")} <= {False, None}
    again = await call(
        client, "transact", {"connection_id": cid, "data": "AT\r", "match": "OK\r\n", "timeout_ms": 10_000}
    )
    assert again["read"]["data"] == "\r\nOK\r\n", "the line still works after line control"
    closed = await call(client, "close", {"connection_id": cid})
    assert closed["tx_bytes"] == len("AT+ECHO=net\r") + 3 + 3


async def test_mcp_reconfigure_over_rfc2217(client: Client, ser2net_factory: Start) -> None:
    bridge = ser2net_factory(echo)
    cid = (await call(client, "open", {"port": bridge.url("rfc2217", "ign_set_control")}))["connection_id"]
    assert tty_speed(bridge) == termios.B115200
    out = await call(client, "reconfigure", {"connection_id": cid, "baud_rate": 19200})
    assert out["settings"]["baud_rate"] == 19200 and out["previous"]["baud_rate"] == 115200
    assert tty_speed(bridge) == termios.B19200, "ser2net set the new rate on the device"
    status = await call(client, "get_status", {"connection_id": cid})
    assert status["settings"]["baud_rate"] == 19200


async def test_mcp_open_rfc2217_error_names_ign_set_control(client: Client, ser2net_factory: Start) -> None:
    bridge = ser2net_factory(echo)
    r = await client.call_tool("open", {"port": bridge.url("rfc2217", "timeout=1")})
    assert r.is_error and r.structured_content is not None
    err = r.structured_content["error"]
    assert err["code"] == "port_open_failed" and "ign_set_control" in err["message"]


@pytest.mark.parametrize("scheme", SCHEMES)
async def test_mcp_read_sees_ser2net_die(
    client: Client, ser2net_factory: Start, scheme: tuple[str, str]
) -> None:
    bridge = ser2net_factory(None)
    cid = (await call(client, "open", {"port": bridge.url(*scheme)}))["connection_id"]
    asyncio.get_running_loop().call_later(0.1, bridge.kill)
    async with asyncio.timeout(LIMIT):
        r = await call(client, "read", {"connection_id": cid, "match": "never", "timeout_ms": 600_000})
    assert r["stop_reason"] == "disconnected" and r["state"] == "disconnected"
    status = await call(client, "get_status", {"connection_id": cid})
    assert status["state"] == "disconnected" and status["last_error"]


@pytest.mark.parametrize("scheme", SCHEMES)
async def test_reconnects_when_ser2net_comes_back(
    manager: ConnectionManager, ser2net_factory: Start, scheme: tuple[str, str]
) -> None:
    """A bench machine's ser2net restarts: with a reconnect policy the connection goes
    ``reconnecting``, then ``open`` again on the same ring, offsets continuing."""
    from serial_mcp.core.reconnect import ReconnectPolicy

    bridge = ser2net_factory(echo)
    policy = ReconnectPolicy(max_attempts=0, initial_delay_ms=20, max_delay_ms=200)
    conn = await manager.open(bridge.url(*scheme), reconnect=policy)
    await conn.tx.write(b"before\n")
    first = await reader.read(conn, req(match="\n", timeout_ms=10_000))
    assert first.data == b"before\n"
    bridge.kill()
    await wait_for_state(conn, lambda state: state != "open")
    assert conn.state == "reconnecting" and conn.last_error
    bridge.restart()
    await wait_for_state(conn, lambda state: state == "open")
    assert conn.reconnects == 1
    await conn.tx.write(b"after\n")
    second = await reader.read(conn, req(match="\n", timeout_ms=10_000))
    assert second.data == b"after\n" and second.from_offset == first.next_offset
