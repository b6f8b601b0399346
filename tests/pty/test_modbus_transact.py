"""Modbus RTU in one tool call: transact(protocol="modbus_rtu") against a real pymodbus slave frames the
request (CRC appended), ends the read on the decoded reply (not on idle) and returns its registers."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import threading
import tty
from collections.abc import Iterator

import pytest
from mcp import Client

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.system_open import SystemOpener
from tests.pty.test_modbus_pymodbus import SLAVE
from tests.tool_calls import call

pytest.importorskip("pymodbus")
pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _relay(a: int, b: int, stop: threading.Event) -> None:
    """Copy bytes both ways between two PTY masters (a null-modem cable between two PTYs)."""
    while not stop.is_set():
        ready, _, _ = select.select([a, b], [], [], 0.1)
        for fd in ready:
            try:
                data = os.read(fd, 4096)
            except OSError:
                return
            os.write(b if fd == a else a, data)


@pytest.fixture
def slave_port() -> Iterator[str]:
    """A pymodbus RTU slave on one PTY, the engine's port on another, a relay between their masters."""
    slave_master, slave_side = os.openpty()
    host_master, host_side = os.openpty()
    for fd in (slave_master, slave_side, host_master, host_side):
        tty.setraw(fd)
    proc = subprocess.Popen(
        [sys.executable, "-c", SLAVE, os.ttyname(slave_side), "rtu"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip() == "ready", proc.stderr.read() if proc.stderr else line
    stop = threading.Event()
    relay = threading.Thread(target=_relay, args=(slave_master, host_master, stop), daemon=True)
    relay.start()
    try:
        yield os.ttyname(host_side)
    finally:
        stop.set()
        relay.join(2)
        proc.kill()
        proc.wait()
        for fd in (slave_master, slave_side, host_master, host_side):
            os.close(fd)


async def test_read_holding_registers_in_one_call(slave_port: str) -> None:
    async with Client(build_server(ConnectionManager(SystemOpener()))) as c:
        cid = (await call(c, "open", {"port": slave_port, "protocol": "modbus_rtu"}))["connection_id"]
        r = await call(c, "transact", {"connection_id": cid, "data": "010300000003", "encoding": "hex", "timeout_ms": 5000})
        assert r["read"]["stop_reason"] == "final", r["read"]
        (frame,) = r["read"]["frames"]
        assert frame["checksum_valid"] is True and frame["parsed"]["registers"] == [100, 101, 102]
        assert r["write"]["bytes_written"] == 8  # address + PDU + CRC-16/MODBUS
