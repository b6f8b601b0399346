"""Issue 40.5: no fixed ceiling below a lab host. The connection cap is a setting (256 by default), a refusal
names it and the file limit, and a port whose descriptors are numbered past select()'s 1024 (a host with a
hundred ports open) still reads and writes."""

from __future__ import annotations

import os
import resource

import pytest

from serial_mcp.config import OPTION_BY_NAME
from serial_mcp.errors import ErrorCode, SerialMcpError
from serial_mcp.serial import reader
from serial_mcp.serial.manager import (
    DEFAULT_MAX_CONNECTIONS,
    DESCRIPTORS_PER_PORT,
    ConnectionManager,
    raise_file_limit,
)
from serial_mcp.serial.system_open import SystemOpener
from tests.pty.devices import PtyDevice, echo

pytestmark = pytest.mark.anyio


def test_the_connection_cap_is_a_setting_that_fits_a_lab_host() -> None:
    option = OPTION_BY_NAME["max_connections"]
    assert option.default == DEFAULT_MAX_CONNECTIONS >= 128


async def test_an_open_past_the_cap_names_the_setting_and_the_file_limit(
    pty_factory: list[PtyDevice],
) -> None:
    devices = [PtyDevice().start() for _ in range(3)]
    pty_factory.extend(devices)
    manager = ConnectionManager(SystemOpener(), max_connections=2)
    try:
        for dev in devices[:2]:
            await manager.open(dev.path)
        with pytest.raises(SerialMcpError) as refused:
            await manager.open(devices[2].path)
        assert refused.value.code == ErrorCode.TOO_MANY_CONNECTIONS
        text = refused.value.message
        assert (
            "--max-connections 2" in text
            and f"of its {resource.getrlimit(resource.RLIMIT_NOFILE)[0]}" in text
        )
    finally:
        await manager.close_all()


async def test_a_port_opened_past_descriptor_1024_reads_and_writes(pty_factory: list[PtyDevice]) -> None:
    soft, hard = raise_file_limit()
    if soft < 1200:
        pytest.skip(f"the file limit here is {soft} (hard {hard}): cannot hold descriptors past 1024")
    dev = PtyDevice(echo).start()
    pty_factory.append(dev)
    fillers = []
    while (fd := os.open(os.devnull, os.O_RDONLY)) < 1030:  # the next descriptors are past select()'s reach
        fillers.append(fd)
    os.close(fd)
    manager = ConnectionManager(SystemOpener())
    try:
        conn = await manager.open(dev.path)
        await conn.tx.write(b"past the select limit\n")
        out = await reader.read(conn, reader.build_read_request(match="\n", timeout_ms=5000))
        assert out.data == b"past the select limit\n" and out.stop_reason == "match"
    finally:
        await manager.close_all()
        for filler in fillers:
            os.close(filler)


async def test_a_device_port_holds_the_descriptors_the_docs_say(pty_factory: list[PtyDevice]) -> None:
    dev = PtyDevice().start()
    pty_factory.append(dev)
    manager = ConnectionManager(SystemOpener())
    try:
        before = len(os.listdir("/proc/self/fd"))
        await manager.open(dev.path)
        assert len(os.listdir("/proc/self/fd")) - before == DESCRIPTORS_PER_PORT
    finally:
        await manager.close_all()
