"""Lifecycle on real PTYs through the MCP tools: unplug mid-transact and mid-flood, reconnect to a
new PTY behind the same symlink, live baud change."""

from __future__ import annotations

import os
import random
import termios
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from mcp import Client

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.system_open import SystemOpener
from tests.pty.devices import AtResponder, PtyDevice, echo
from tests.tool_calls import call

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
async def manager() -> ConnectionManager:
    return ConnectionManager(SystemOpener())


@pytest.fixture
async def client(manager: ConnectionManager) -> AsyncIterator[Client]:
    async with Client(build_server(manager)) as c:
        yield c


async def test_unplug_during_transact(client: Client, pty_factory: list[PtyDevice]) -> None:
    responder = AtResponder()
    silent_sent = threading.Event()

    def device(data: bytes) -> bytes | None:
        reply = responder(data)
        if b"SILENT" in bytes(dev.received):
            silent_sent.set()
        return reply

    dev = PtyDevice(device).start()
    pty_factory.append(dev)
    cid = (await call(client, "open", {"port": dev.path}))["connection_id"]
    assert (await call(client, "transact", {"connection_id": cid, "data": "AT\r", "match": "OK"}))["read"][
        "matched"
    ]

    async def pull_the_plug() -> None:  # once the command is out, while the transact waits for its reply
        assert await anyio.to_thread.run_sync(silent_sent.wait, 30)
        dev.unplug()

    async with anyio.create_task_group() as tg:
        tg.start_soon(pull_the_plug)
        # "AT+SILENT" gets ERROR from the responder only after a CR; we send none, so no reply comes
        r = await call(
            client,
            "transact",
            {"connection_id": cid, "data": "AT+SILENT", "match": "OK", "timeout_ms": 600_000},
        )
    assert r["read"]["stop_reason"] == "disconnected"
    status = await call(client, "get_status", {"connection_id": cid})
    assert status["state"] == "disconnected" and status["last_error"]
    e = await client.call_tool("write", {"connection_id": cid, "data": "AT\r"})
    assert e.is_error and e.structured_content["error"]["code"] == "not_connected"


async def test_unplug_during_flood_keeps_what_arrived(client: Client, pty_factory: list[PtyDevice]) -> None:
    dev = PtyDevice().start()
    pty_factory.append(dev)
    cid = (await call(client, "open", {"port": dev.path, "rx_buffer_size": 8 * 1024 * 1024}))["connection_id"]
    sent = random.Random(5).randbytes(2 * 1024 * 1024)
    half = len(sent) // 2

    def flood_then_unplug() -> None:
        dev.send(sent[:half])
        dev.unplug()

    threading.Thread(target=flood_then_unplug, daemon=True).start()
    got = bytearray()
    while True:
        r = await call(
            client,
            "read",
            {"connection_id": cid, "encoding": "hex", "max_bytes": 1_000_000, "timeout_ms": 30_000},
        )
        got += bytes.fromhex(r["data"])
        if r["stop_reason"] == "disconnected":
            break
    # Linux discards a hung-up PTY's unread input, so the tail may be gone; what arrived is exact.
    assert got and bytes(got) == sent[: len(got)] and len(got) <= half


async def test_a_new_pty_behind_the_same_symlink_is_not_taken(
    client: Client, manager: ConnectionManager, pty_factory: list[PtyDevice], tmp_path: Path
) -> None:
    """Issue 36.5: a reconnect by name must find the device first opened; another device behind
    the same link (not followed by USB identity) is refused on every attempt, never a silent switch."""
    first = PtyDevice(echo).start()
    pty_factory.append(first)
    link = tmp_path / "ttyUSB-bench"
    link.symlink_to(first.path)
    policy = {"initial_delay_ms": 20, "max_delay_ms": 100, "max_attempts": 0}
    cid = (await call(client, "open", {"port": str(link), "reconnect": policy}))["connection_id"]
    r = await call(
        client, "transact", {"connection_id": cid, "data": "one\n", "match": "\n", "timeout_ms": 5000}
    )
    assert r["read"]["data"] == "one\n" and r["read"]["next_offset"] == 4
    first.unplug()
    # the port is gone: while reconnecting, reads still honour their timeout
    waiting = await call(client, "read", {"connection_id": cid, "timeout_ms": 150, "match": "x"})
    assert waiting["state"] in ("reconnecting", "disconnected") and waiting["stop_reason"] in (
        "timeout",
        "disconnected",
    )
    assert waiting["state"] == "reconnecting"
    second = PtyDevice(echo).start()
    pty_factory.append(second)
    tmp_link = tmp_path / "ttyUSB-bench.new"
    tmp_link.symlink_to(second.path)
    os.replace(tmp_link, link)  # another device appears at the same name
    conn = manager.get(cid)
    with anyio.fail_after(30):
        while second.path not in (conn.last_error or ""):  # woken by each refused attempt
            await conn.wait_change(5.0)
    status = await call(client, "get_status", {"connection_id": cid})
    assert status["state"] == "reconnecting" and status["reconnects"] == 0, status
    assert first.path in status["last_error"], status
    assert bytes(second.received) == b"", "nothing reached the other device"


async def test_reconfigure_baud_on_a_live_pty(client: Client, pty_factory: list[PtyDevice]) -> None:
    dev = PtyDevice(echo).start()
    pty_factory.append(dev)
    cid = (await call(client, "open", {"port": dev.path, "baud_rate": 115200}))["connection_id"]
    assert termios.tcgetattr(dev._slave)[5] == termios.B115200
    r = await call(client, "reconfigure", {"connection_id": cid, "baud_rate": 9600})
    assert r["settings"]["baud_rate"] == 9600 and r["previous"]["baud_rate"] == 115200
    attrs = termios.tcgetattr(dev._slave)
    assert attrs[4] == termios.B9600 and attrs[5] == termios.B9600  # ispeed, ospeed
    # Linux PTYs refuse 7 data bits / parity (EINVAL): the change is rolled back and said so
    bad = await client.call_tool("reconfigure", {"connection_id": cid, "data_bits": 7, "parity": "even"})
    assert bad.is_error and bad.structured_content["error"]["code"] == "settings_rejected"
    status = await call(client, "get_status", {"connection_id": cid})
    assert status["settings"]["data_bits"] == 8 and status["settings"]["baud_rate"] == 9600
    assert termios.tcgetattr(dev._slave)[2] & termios.CSIZE == termios.CS8
    r2 = await call(
        client, "transact", {"connection_id": cid, "data": "still here\n", "match": "\n", "timeout_ms": 5000}
    )
    assert r2["read"]["data"] == "still here\n"
