"""identify on real PTYs: another program holding the tty is named (a competing prober such as
ModemManager, a terminal); the answer still comes, and nothing is written without ``probe``."""

from __future__ import annotations

import subprocess

import pytest

from serial_mcp import Engine
from tests.pty.devices import PtyDevice

pytestmark = pytest.mark.anyio


async def test_another_program_holding_the_tty_is_named(pty_factory: list[PtyDevice]) -> None:
    dev = PtyDevice().start()
    pty_factory.append(dev)
    holder = subprocess.Popen(
        ["sh", "-c", f"exec < '{dev.path}'; echo ready; exec sleep 60"], stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"ready\n"  # it holds the tty now
        async with Engine() as eng:
            (answer,) = (await eng.identify(ports=[dev.path], listen_ms=200)).ports
    finally:
        holder.kill()
        holder.wait()
    assert answer.kind == "silent" and answer.sent == []
    assert answer.competing == [f"sleep ({holder.pid})"]
    assert f"also held by sleep ({holder.pid})" in answer.line()
