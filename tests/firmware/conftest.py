"""Fixtures for real firmware in QEMU: U-Boot (arm64 ``virt``) and a busybox Linux console (x86_64), each
reached as ``socket://127.0.0.1:P`` through serial-mcp's production opener.

- ``uboot_url`` → str: a fresh U-Boot machine per test, not started until the first client connects.
- ``linux_url`` → str: a fresh Linux machine per test (about 15–20 s under TCG to ``board login: ``).
- ``linux_initramfs`` (session) → Path: the busybox initramfs, built once.
- ``agent`` → ``Agent``: an in-process serial-mcp client that counts tool calls and result bytes.

Every fixture skips, loudly, when what it needs is not installed (``.ci/run`` installs it).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from mcp import Client

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.openers import default_opener
from tests.firmware import machines
from tests.firmware.agent import Agent

SKIP_PREFIX = "REAL FIRMWARE NOT TESTED"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "firmware: real firmware (U-Boot, Linux) in QEMU over socket://")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/firmware/" in str(item.path).replace("\\", "/"):
            item.add_marker(pytest.mark.firmware)  # tests/conftest.py makes it serial (and slow)
            item.add_marker(pytest.mark.timeout(600))  # a boot under TCG on a busy machine


@pytest.fixture
def uboot_url(tmp_path: Path) -> Iterator[str]:
    """socket:// URL of a U-Boot console that starts booting when it is opened."""
    if (why := machines.missing_for_uboot()) is not None:
        pytest.skip(f"{SKIP_PREFIX}: {why}")
    machine = machines.uboot_machine(tmp_path).start()
    try:
        yield machine.url
    finally:
        machine.kill()


@pytest.fixture(scope="session")
def linux_initramfs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The busybox initramfs (root password ``machines.LINUX_PASSWORD``), built once per session."""
    if (why := machines.missing_for_linux()) is not None:
        pytest.skip(f"{SKIP_PREFIX}: {why}")
    return machines.build_initramfs(tmp_path_factory.mktemp("linux") / "initramfs.cpio")


@pytest.fixture
def linux_url(tmp_path: Path, linux_initramfs: Path) -> Iterator[str]:
    """socket:// URL of a Linux console (getty on ttyS0) that starts booting when it is opened."""
    machine = machines.linux_machine(tmp_path, linux_initramfs).start()
    try:
        yield machine.url
    finally:
        machine.kill()


@pytest.fixture
async def agent() -> AsyncIterator[Agent]:
    """serial-mcp in-process over the production opener, as an agent sees it (structured + text results)."""
    manager = ConnectionManager(default_opener())
    async with Client(build_server(manager)) as client:
        yield Agent(client)
    await manager.close_all()
