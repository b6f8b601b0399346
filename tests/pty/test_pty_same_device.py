"""A reopen opens the same device (issue 36.5).

A port opened through a symlink is reopened by its name on every reclaim and reconnect; a link
repointed meanwhile (to another PTY here; in life another adapter) must not become a silent switch:
the reopen is refused with ``not_allowed`` and the other device gets nothing. A reopen of the same
node (a replugged adapter) still goes through.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from mcp import Client

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.handle import Opener
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.policy import PortPolicy, policy_opener
from serial_mcp.serial.system_open import SystemOpener
from tests.pty.devices import PtyDevice, echo
from tests.tool_calls import call, error

pytestmark = [pytest.mark.anyio, pytest.mark.pty]


@pytest.fixture(params=["no allowlist", "allowlist"])
async def served(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Client, ConnectionManager]]:
    """The production opener, bare or behind an allowlist that admits both PTYs (each reopen is
    judged again, on the link's new target, and admitted: the same-device rule must still hold)."""
    opener: Opener = SystemOpener()
    if request.param == "allowlist":
        opener = policy_opener(PortPolicy.of(allowlist=["/dev/pts/*"]), inner=opener)
    manager = ConnectionManager(opener)
    async with Client(build_server(manager)) as c:
        yield c, manager
        await manager.close_all()


def repoint(link: Path, target: str) -> None:
    """Swap what ``link`` names, atomically (as udev does)."""
    tmp = link.with_name(link.name + ".new")
    os.symlink(target, tmp)
    os.replace(tmp, link)


async def wait_event(conn: Connection, kind: str) -> dict[str, object]:
    """The first logged event of ``kind``: woken by the connection's changes, not by polling."""
    with anyio.fail_after(30):
        while True:
            found = [e for e in conn.log.tail(10_000) if e.type == kind]
            if found:
                return dict(found[0].fields)
            await conn.wait_change(30)


async def test_a_reclaim_through_a_repointed_link_is_refused(
    served: tuple[Client, ConnectionManager], pty_factory: list[PtyDevice], tmp_path: Path
) -> None:
    c, manager = served
    first, other = PtyDevice(echo).start(), PtyDevice(echo).start()
    pty_factory += [first, other]
    link = tmp_path / "ttyBOARD"
    os.symlink(first.path, link)
    cid = (await call(c, "open", {"port": str(link)}))["connection_id"]
    conn = manager.get(cid)

    await call(c, "lend", {"connection_id": cid, "action": "release", "timeout_ms": 600_000})
    repoint(link, other.path)
    back = await call(c, "lend", {"connection_id": cid, "action": "reclaim"})

    assert back["state"] != "open", back
    status = await call(c, "get_status", {"connection_id": cid})
    assert status["last_error"] and other.path in status["last_error"], status
    assert first.path in status["last_error"], "the refusal names the device first opened"
    refused = await error(c, "write", {"connection_id": cid, "data": "to the other board"})
    assert refused["code"] in ("not_connected", "port_released", "io_error"), refused
    kinds = [e.type for e in conn.log.tail(100)]
    assert "moved" not in kinds and "reclaim" not in kinds, kinds
    assert bytes(other.received) == b"", "nothing reached the other device"

    repoint(link, first.path)  # the link back where it was: the reconnect loop takes the port again
    await wait_event(conn, "reconnect")
    assert conn.state == "open"
    r = await call(
        c, "transact", {"connection_id": cid, "data": "hello\n", "match": "\n", "timeout_ms": 5000}
    )
    assert r["read"]["data"] == "hello\n", r
    assert bytes(first.received) == b"hello\n" and bytes(other.received) == b""


async def test_a_reconnect_through_a_repointed_link_is_refused(
    served: tuple[Client, ConnectionManager], pty_factory: list[PtyDevice], tmp_path: Path
) -> None:
    c, manager = served
    first, other = PtyDevice().start(), PtyDevice().start()
    pty_factory += [first, other]
    link = tmp_path / "ttyBOARD"
    os.symlink(first.path, link)
    cid = (await call(c, "open", {"port": str(link)}))["connection_id"]

    repoint(link, other.path)
    refused = await error(c, "reconnect", {"connection_id": cid})
    assert refused["code"] == "not_allowed", refused
    assert other.path in refused["message"] and first.path in refused["message"], refused
    assert manager.get(cid).state == "disconnected"
    assert bytes(other.received) == b""

    repoint(link, first.path)
    await call(c, "reconnect", {"connection_id": cid})  # the same device again: taken
    assert manager.get(cid).state == "open"


async def test_the_same_node_reopened_is_taken(
    served: tuple[Client, ConnectionManager], pty_factory: list[PtyDevice]
) -> None:
    """A reopen of the very node (a replugged adapter comes back at the same ``/dev`` node and
    device number) is no change: the connection goes on."""
    c, _ = served
    dev = PtyDevice().start()
    pty_factory.append(dev)
    cid = (await call(c, "open", {"port": dev.path}))["connection_id"]
    await call(c, "lend", {"connection_id": cid, "action": "release", "timeout_ms": 600_000})
    back = await call(c, "lend", {"connection_id": cid, "action": "reclaim"})
    assert back["state"] == "open", back
    await call(c, "reconnect", {"connection_id": cid})
    assert (await call(c, "get_status", {"connection_id": cid}))["state"] == "open"
