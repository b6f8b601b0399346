"""Every write is logged before it goes out (issue 27, item 4): the engine's ``conn.send`` (TX turn
held) and ``conn.send_now`` (any thread: the PTY and RFC 2217 mirrors, the responders' writer) log
the tx event first, so a reply the device sends at once is never logged before its command."""

from __future__ import annotations

import ast
from pathlib import Path

import anyio
import pytest

from serial_mcp.serial.connection import Connection
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager

pytestmark = pytest.mark.anyio
SERIAL = Path(__file__).resolve().parents[2] / "serial_mcp" / "serial"


async def test_send_and_send_now_log_before_the_device_sees_a_byte() -> None:
    opener = FakeOpener()
    box: list[Connection] = []
    logged_first: list[tuple[bytes, bool]] = []

    def device(data: bytes) -> None:  # runs inside the handle's write: the bytes are going out now
        conn = box[0]
        with conn.thread_lock:
            tx = [e for e in conn.log.tail(8) if e.type == "tx"]
        logged_first.append((data, bool(tx) and tx[-1].data == data))

    opener.add("p", device)
    manager = ConnectionManager(opener)
    conn = await manager.open("p")
    box.append(conn)
    try:
        async with conn.tx.turn(1.0):
            await conn.send(b"engine\r")
        await anyio.to_thread.run_sync(lambda: conn.send_now(b"mirror\r", source="mirror"))
        await anyio.to_thread.run_sync(lambda: conn.send_now(b"answer\r", 1.0, respond=True))
    finally:
        await manager.close(conn.id)
    assert logged_first == [(b"engine\r", True), (b"mirror\r", True), (b"answer\r", True)]
    tx = [e for e in conn.log.since(0) if e.type == "tx"]
    assert [e.fields for e in tx] == [{}, {"source": "mirror"}, {"respond": True}]


@pytest.mark.parametrize("name", ["mirror.py", "rfc2217_mirror.py", "responder.py"])
def test_mirrors_and_responders_write_only_through_send_now(name: str) -> None:
    """No write of their own around the log: ``tx.write_now`` or ``record("tx", ...)`` here would
    bring back two orders of logging and writing."""
    tree = ast.parse((SERIAL / name).read_text())
    own = [
        f"{ast.unparse(n.func)} line {n.lineno}"
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and (
            n.func.attr in ("write_now", "write_locked")
            or (
                n.func.attr == "record"
                and n.args
                and isinstance(n.args[0], ast.Constant)
                and n.args[0].value == "tx"
            )
        )
    ]
    assert not own, own
