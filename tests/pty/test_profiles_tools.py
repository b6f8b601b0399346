"""Device profiles through the MCP tools: a fake port provider gives real PTYs USB identities, so
selection, generation, reuse, ambiguity and duplicates run the production path."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.ports import PortInfo
from serial_mcp.serial.system_open import SystemOpener
from serial_mcp.store.profiles import ProfileStore
from tests.pty.devices import PtyDevice, echo
from tests.tool_calls import call, error

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


class Bench:
    """Three PTYs: a unique FTDI (high confidence), and two identical CH340s without serials."""

    def __init__(self) -> None:
        self.ftdi, self.ch_a, self.ch_b = (PtyDevice(echo).start() for _ in range(3))
        self.unplugged: set[str] = set()

    def ports(self) -> list[PortInfo]:
        all_ports = [
            PortInfo(
                self.ftdi.path,
                "FT232R USB UART",
                None,
                "0403",
                "6001",
                "A10K3Z",
                "FTDI",
                "FT232R",
                None,
                "1-1",
                "usb",
            ),
            PortInfo(
                self.ch_a.path,
                "USB Serial",
                None,
                "1a86",
                "7523",
                None,
                "QinHeng",
                "CH340",
                None,
                "1-2",
                "usb",
            ),
            PortInfo(
                self.ch_b.path,
                "USB Serial",
                None,
                "1a86",
                "7523",
                None,
                "QinHeng",
                "CH340",
                None,
                "1-3",
                "usb",
            ),
        ]
        return [p for p in all_ports if p.name not in self.unplugged]

    def close(self) -> None:
        for d in (self.ftdi, self.ch_a, self.ch_b):
            d.close()


@pytest.fixture
def bench() -> Iterator[Bench]:
    b = Bench()
    yield b
    b.close()


@pytest.fixture
async def env(bench: Bench, tmp_path: Path) -> AsyncIterator[tuple[Client, ProfileStore]]:
    store = ProfileStore(tmp_path / "profiles.toml")
    server = build_server(ConnectionManager(SystemOpener()), port_lister=bench.ports, profiles=store)
    async with Client(server) as c:
        yield c, store


async def test_bare_open_generates_then_reuses_a_profile(
    env: tuple[Client, ProfileStore], bench: Bench
) -> None:
    c, store = env
    first = await call(c, "open", {"port": bench.ftdi.path, "baud_rate": 57600})
    assert first["profile_action"] == "generate" and first["profile"].startswith("auto-")
    name = first["profile"]
    saved = store.get(name)
    assert saved is not None and saved.generated and saved.defaults["baud_rate"] == 57600
    assert saved.selector["serial_number"] == "A10K3Z"
    # a live change is learned through the bound profile
    r = await call(c, "reconfigure", {"connection_id": first["connection_id"], "baud_rate": 230400})
    assert r["profile_persistence"] == "persisted"
    r = await call(c, "reconfigure", {"connection_id": first["connection_id"], "baud_rate": 230400})
    assert r["profile_persistence"] == "not_needed"
    await call(c, "close", {"connection_id": first["connection_id"]})
    again = await call(c, "open", {"port": bench.ftdi.path})
    assert again["profile_action"] == "reuse" and again["profile"] == name and again["baud_rate"] == 230400
    await call(c, "close", {"connection_id": again["connection_id"]})
    none = await call(c, "open", {"port": bench.ftdi.path, "profile_mode": "none"})
    assert none["profile"] is None and none["baud_rate"] == 115200


async def test_duplicates_and_weak_identity_stay_transient(
    env: tuple[Client, ProfileStore], bench: Bench
) -> None:
    c, store = env
    r = await call(c, "open", {"port": bench.ch_a.path})
    assert r["profile_action"] == "transient" and r["profile"] is None
    changed = await call(c, "reconfigure", {"connection_id": r["connection_id"], "baud_rate": 9600})
    assert changed["profile_persistence"] == "transient"
    assert store.list() == []
    ports = await call(c, "list_ports", {})
    actions = {m["port"]: m["action"] for m in ports["profile_matches"]}
    assert actions[bench.ftdi.path] == "generate" and actions[bench.ch_a.path] == "transient"


async def test_save_open_configure_rollback_delete(env: tuple[Client, ProfileStore], bench: Bench) -> None:
    c, store = env
    cid = (
        await call(
            c,
            "open",
            {"port": bench.ch_b.path, "baud_rate": 19200, "protocol": "at_command", "profile_mode": "none"},
        )
    )["connection_id"]
    saved = await call(c, "save_profile", {"connection_id": cid, "name": "modem"})
    assert saved["revision"] == 1 and saved["profile"]["defaults"]["protocol"] == "at_command"
    dup = await error(c, "save_profile", {"connection_id": cid, "name": "modem"})
    assert dup["code"] == "profile_exists"
    busy = await error(c, "delete_profile", {"name": "modem"})
    assert busy["code"] == "profile_in_use" and cid in busy["message"]
    await call(c, "close", {"connection_id": cid})
    # two identical CH340s match the saved selector: open_profile refuses and names both
    amb = await error(c, "open_profile", {"name": "modem"})
    assert amb["code"] == "profile_no_unique_port" and bench.ch_a.path in amb["message"]
    bench.unplugged.add(bench.ch_a.path)
    opened = await call(c, "open_profile", {"name": "modem"})
    assert opened["port"] == bench.ch_b.path and opened["baud_rate"] == 19200 and opened["profile"] == "modem"
    await call(c, "close", {"connection_id": opened["connection_id"]})
    v2 = await call(
        c, "configure", {"profile": "modem", "defaults": {"baud_rate": 38400}, "expected_revision": 1}
    )
    assert v2["revision"] == 2
    stale = await error(
        c, "configure", {"profile": "modem", "defaults": {"baud_rate": 1200}, "expected_revision": 1}
    )
    assert stale["code"] == "revision_conflict"
    both = await error(c, "configure", {"profile": "modem", "connection_id": "c9", "defaults": {}})
    assert both["code"] == "invalid_argument"
    back = await call(c, "rollback_profile", {"name": "modem", "to_revision": 1, "expected_revision": 2})
    assert back["revision"] == 3 and back["profile"]["defaults"]["baud_rate"] == 19200
    listed = await call(c, "list_profiles", {})
    assert [p["name"] for p in listed["profiles"]] == ["modem"]
    await call(c, "delete_profile", {"name": "modem"})
    assert store.list() == []


async def test_unknown_profile_names_are_clear_errors(env: tuple[Client, ProfileStore]) -> None:
    c, _ = env
    calls: list[tuple[str, dict[str, Any]]] = [
        ("open_profile", {"name": "ghost"}),
        ("delete_profile", {"name": "ghost"}),
        ("rollback_profile", {"name": "ghost", "to_revision": 1}),
    ]
    for tool, args in calls:
        e = await error(c, tool, args)
        assert e["code"] == "profile_not_found" and "ghost" in e["message"], (tool, e)


async def test_a_full_profile_store_does_not_stop_an_open(
    env: tuple[Client, ProfileStore], bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    from serial_mcp.store import profiles as store_module

    c, store = env
    monkeypatch.setattr(store_module, "MAX_PROFILES", 0)
    opened = await call(c, "open", {"port": bench.ftdi.path})
    assert opened["profile_action"] == "transient" and opened["state"] == "open", opened
    assert store.list() == []
    e = await error(c, "save_profile", {"connection_id": opened["connection_id"], "name": "mine"})
    assert e["code"] == "resource_limit" and "delete some" in e["message"], e
