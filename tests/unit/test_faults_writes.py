"""Writes that return: a device that stopped reading (a full PTY) or sent XOFF ends a write at its
deadline with the count that went out; later writes are not stuck behind it; closing the port ends a
write that would otherwise wait for ever. Real PTYs through the production SystemOpener."""

from __future__ import annotations

import fcntl
import os
import struct
import sys
import termios
import tty
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import pytest
from mcp import Client

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.system_open import SystemOpener
from tests.raw_rpc import INITIALIZE, INITIALIZED
from tests.tool_calls import call, error

if not sys.platform.startswith("linux"):
    pytest.skip("needs Linux PTYs", allow_module_level=True)

pytestmark = pytest.mark.anyio
FLOOD = "00" * 1_000_000  # 1 MB, hex: far more than a PTY buffers


def _unread(master: int) -> int:
    """Bytes the host wrote that the far end has not read (FIONREAD on the master)."""
    return struct.unpack("i", fcntl.ioctl(master, termios.FIONREAD, b"\0\0\0\0"))[0]  # type: ignore[no-any-return]


@pytest.fixture
def far_end() -> Iterator[tuple[int, str]]:
    """A PTY whose far end (the "device") never reads: (master fd, slave path)."""
    master, slave = os.openpty()
    tty.setraw(master)
    path = os.ttyname(slave)
    os.close(slave)
    yield master, path
    os.close(master)


@pytest.fixture
async def client() -> AsyncIterator[tuple[Client, ConnectionManager]]:
    manager = ConnectionManager(SystemOpener())
    async with Client(build_server(manager)) as c:
        yield c, manager
    await manager.close_all()


@pytest.mark.slow
async def test_a_write_to_a_device_that_stopped_reading_returns_with_the_count(
    far_end: tuple[int, str], client: tuple[Client, ConnectionManager]
) -> None:
    _, path = far_end
    c, _ = client
    cid = (await call(c, "open", {"port": path}))["connection_id"]
    with anyio.fail_after(30):  # a hang guard, not a timing assertion
        r = await call(
            c, "write", {"connection_id": cid, "data": FLOOD, "encoding": "hex", "timeout_ms": 300}
        )
    assert r["stop_reason"] == "timeout"
    assert 0 < r["bytes_written"] < 1_000_000
    assert r["tx_bytes"] == r["bytes_written"]
    with anyio.fail_after(30):  # the next write is not stuck behind the first
        again = await call(c, "write", {"connection_id": cid, "data": "more", "timeout_ms": 200})
    assert again["stop_reason"] == "timeout" and again["bytes_written"] == 0
    err = await error(
        c, "transact", {"connection_id": cid, "data": FLOOD, "encoding": "hex", "write_timeout_ms": 200}
    )
    assert err["code"] == "write_timeout" and "of 1000000 bytes" in err["message"]
    assert (await call(c, "get_status", {"connection_id": cid}))["state"] == "open"  # the port is fine


@pytest.mark.slow
async def test_a_write_held_by_xoff_times_out_and_goes_on_after_xon(
    far_end: tuple[int, str], client: tuple[Client, ConnectionManager]
) -> None:
    master, path = far_end
    c, _ = client
    cid = (await call(c, "open", {"port": path, "flow_control": "software"}))["connection_id"]
    os.write(master, b"\x13")  # XOFF
    await call(c, "read", {"connection_id": cid, "timeout_ms": 200})  # let the tty see it
    with anyio.fail_after(30):
        r = await call(c, "write", {"connection_id": cid, "data": "hello", "timeout_ms": 300})
    assert r == {**r, "stop_reason": "timeout", "bytes_written": 0}
    os.write(master, b"\x11")  # XON
    await call(c, "read", {"connection_id": cid, "timeout_ms": 200})
    r = await call(c, "write", {"connection_id": cid, "data": "hello", "timeout_ms": 5000})
    assert r["stop_reason"] == "complete" and r["bytes_written"] == 5
    with anyio.fail_after(10):
        got = b""
        while b"hello" not in got:
            await anyio.wait_readable(master)
            got += os.read(master, 100)


@pytest.mark.slow
async def test_closing_ends_a_stuck_write_at_once(
    far_end: tuple[int, str], client: tuple[Client, ConnectionManager]
) -> None:
    _, path = far_end
    c, manager = client
    cid = (await call(c, "open", {"port": path}))["connection_id"]
    outcome: dict[str, object] = {}

    async def stuck_write() -> None:
        r = await c.call_tool(
            "write", {"connection_id": cid, "data": FLOOD, "encoding": "hex", "timeout_ms": 600_000}
        )
        outcome.update(r.structured_content or {})

    with anyio.fail_after(30):  # the write's own bound is 10 minutes: only close can end it this soon
        async with anyio.create_task_group() as tg:
            tg.start_soon(stuck_write)
            master, _ = far_end
            while _unread(master) == 0:  # bytes in the PTY: the write is out of the engine, and 1 MB
                await anyio.sleep(0.01)  # cannot fit, so from here it is stuck in the kernel
            await manager.close_all()
    assert outcome["error"] == {**outcome["error"], "code": "connection_closed"}  # type: ignore[dict-item]


def test_termios_kept_the_pty_raw() -> None:
    """The fixture's far end is raw: XON/XOFF bytes are data to it (sanity check of the setup)."""
    master, slave = os.openpty()
    try:
        tty.setraw(master)
        assert not termios.tcgetattr(master)[0] & termios.IXON
    finally:
        os.close(master)
        os.close(slave)


@pytest.mark.slow
def test_the_server_exits_when_stdin_closes_during_a_stuck_write(far_end: tuple[int, str]) -> None:
    """Was: the process never exited (and kept the port locked). The write's own bound is 10 minutes."""
    import json
    import subprocess

    _, path = far_end
    rpc: list[dict[str, Any]] = [
        INITIALIZE,
        INITIALIZED,
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "open", "arguments": {"port": path}},
        },
    ]
    write = {"connection_id": "c1", "data": FLOOD, "encoding": "hex", "timeout_ms": 600_000}
    proc = subprocess.Popen(
        [sys.executable, "-m", "serial_mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin and proc.stdout
    try:
        for msg in rpc:
            proc.stdin.write(json.dumps(msg).encode() + b"\n")
            proc.stdin.flush()
            if "id" in msg:
                while json.loads(proc.stdout.readline()).get("id") != msg["id"]:
                    pass
        call = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "write", "arguments": write},
        }
        proc.stdin.write(json.dumps(call).encode() + b"\n")
        proc.stdin.flush()
        proc.stdin.close()
        proc.wait(timeout=60)  # a hang guard: the write alone would hold it for 10 minutes
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    assert "Traceback" not in stderr, stderr
