"""A real ser2net whose device is gone (issue 28.7): it accepts every connection, prints ``Device open
failure: ...`` and closes. That text is not the port coming back: with ``max_attempts: 5`` the
reconnects stop after five attempts, however much each connection printed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from mcp import Client

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.manager import ConnectionManager
from tests.net.conftest import Ser2Net
from tests.pty.devices import PtyDevice
from tests.tool_calls import call

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # runs ser2net, an outside program

GUARD_S = 60  # a hang fails the test instead of stalling the run (not a timing assertion)


@dataclass
class _GoneDevice:
    """Stands in for the ``PtyDevice`` behind ser2net: a path where no device is (ser2net opens it
    on each connection, fails, and says so to the client)."""

    path: str

    def close(self) -> None:
        pass


async def test_ser2net_with_its_device_gone_stops_at_max_attempts(
    tmp_path: Path, manager: ConnectionManager
) -> None:
    gone = _GoneDevice(str(tmp_path / "ttyGONE"))
    bridge = Ser2Net(cast(PtyDevice, gone), tmp_path).start()
    try:
        policy: dict[str, Any] = {"max_attempts": 5, "initial_delay_ms": 5, "max_delay_ms": 20}
        async with Client(build_server(manager)) as c:
            opened = await call(c, "open", {"port": bridge.socket_url, "reconnect": policy})
            cid = opened["connection_id"]
            with anyio.fail_after(GUARD_S):  # before the fix: reconnecting for ever, only the guard ended it
                r = await call(c, "read", {"connection_id": cid, "match": "never", "timeout_ms": 600_000})
            assert r["stop_reason"] == "disconnected"
            # what ser2net said on each of the 6 connections (the open and 5 reconnects) was delivered
            assert r["data"].count("Device open failure") == 6, r["data"]
            status = await call(c, "get_status", {"connection_id": cid})
            assert status["state"] == "disconnected" and status["reconnect_attempts"] == 5
            assert status["reconnects"] <= 5 and "gave up" in status["last_error"]
    finally:
        bridge.kill()
