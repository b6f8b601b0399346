"""Lending a real PTY to another process and taking it back without a call (issue 23.2).

A second process (pyserial, as arduino-cli or avrdude would) opens the node while serial-mcp has
released it, talks to the board, and exits; serial-mcp sees it go in ``/proc`` and reclaims the
port by itself. What the board sends after that is all captured, at the offsets that continue from
before the lend, and nothing the borrower read shows up twice.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from mcp import Client

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.system_open import SystemOpener
from tests.pty.devices import PtyDevice
from tests.tool_calls import call, error

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

BORROWER = """
import sys, serial
port = serial.Serial(sys.argv[1], 115200, timeout=10)
port.write(b"PING\\n")
reply = port.read_until(b"PONG\\n")
port.close()
sys.stdout.write(reply.decode())
"""


@pytest.fixture
async def served() -> AsyncIterator[tuple[Client, ConnectionManager]]:
    manager = ConnectionManager(SystemOpener())
    async with Client(build_server(manager)) as c:
        yield c, manager


async def wait_state(conn: Connection, state: str) -> None:
    """Until ``conn`` is in ``state``: woken by its state changes, not by polling."""
    with anyio.fail_after(30):
        while conn.state != state:
            await conn.wait_change(30)


def inotify_fds() -> int:
    """Our inotify descriptors (the lend's watch on the node)."""
    fds = Path("/proc/self/fd")
    count = 0
    for fd in fds.iterdir():
        with contextlib.suppress(OSError):
            count += os.readlink(fd) == "anon_inode:inotify"
    return count


def pong(data: bytes) -> bytes | None:
    return b"PONG\n" if b"PING\n" in data else None


async def test_a_borrower_that_exits_gets_the_port_reclaimed_by_itself(
    served: tuple[Client, ConnectionManager], pty_factory: list[PtyDevice]
) -> None:
    c, manager = served
    dev = PtyDevice(pong).start()
    pty_factory.append(dev)
    cid = (await call(c, "open", {"port": dev.path}))["connection_id"]
    conn = manager.get(cid)
    dev.send(b"before\n")
    assert (await call(c, "read", {"connection_id": cid, "match": "\n", "timeout_ms": 5000}))[
        "next_offset"
    ] == 7

    before = inotify_fds()
    lent = await call(c, "lend", {"connection_id": cid, "action": "release", "timeout_ms": 600_000})
    assert inotify_fds() == before + 1, "the node is watched"
    assert lent["state"] == "released" and lent["end_offset"] == 7 and lent["lend"]["watching"] is True
    for tool, args in (("read", {"timeout_ms": 0}), ("write", {"data": "x"}), ("transact", {"data": "x"})):
        refused = await error(c, tool, {"connection_id": cid, **args})
        assert refused["code"] == "port_released" and "reclaim" in refused["message"], (tool, refused)

    child = await anyio.to_thread.run_sync(
        lambda: subprocess.run(
            [sys.executable, "-c", BORROWER, dev.path], capture_output=True, timeout=60, check=True
        )
    )
    assert child.stdout == b"PONG\n", child.stderr  # the borrower had the port, and the board's reply

    await wait_state(conn, "open")  # no reclaim call: the watch saw the borrower leave
    payload = bytes(range(256)) * 256  # 64 KiB the board sends once it is ours again
    dev.send(payload)
    got = bytearray()
    first = None
    while len(got) < len(payload):
        r = await call(c, "read", {"connection_id": cid, "encoding": "hex", "timeout_ms": 5000})
        first = r["from_offset"] if first is None else first
        got += bytes.fromhex(r["data"])
    assert first == 7, "offsets continue from before the lend; the borrower's PONG was not replayed"
    assert bytes(got) == payload

    events = (await call(c, "get_log", {"connection_id": cid, "payloads": False}))["events"]
    kinds = [e["type"] for e in events if e["type"] != "rx"]
    assert kinds == ["open", "release", "reclaim"], kinds
    reclaim = next(e for e in events if e["type"] == "reclaim")
    assert reclaim["reason"] == "holder_left" and reclaim["offset"] == 7, reclaim
    assert reclaim["opens"] == 1, "the borrower's open (and close) of the node were seen"
    status = await call(c, "get_status", {"connection_id": cid})
    assert status["state"] == "open" and status["lend"] is None and status["reconnects"] == 0
    assert inotify_fds() == before, "the watch is gone once the port is back"


async def test_closing_a_lent_port_leaves_no_watch_behind(
    served: tuple[Client, ConnectionManager], pty_factory: list[PtyDevice]
) -> None:
    c, manager = served
    dev = PtyDevice().start()
    pty_factory.append(dev)
    cid = (await call(c, "open", {"port": dev.path}))["connection_id"]
    before = inotify_fds()
    await call(c, "lend", {"connection_id": cid, "action": "release"})
    assert inotify_fds() == before + 1
    await call(c, "close", {"connection_id": cid})
    assert inotify_fds() == before and manager.list() == []
