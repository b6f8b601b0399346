"""--read-only writes nothing: no byte to the device, no line or setting change, no profile write.

Every tool and every argument is classified below; a tool or argument added later that is in
neither list fails ``test_every_tool_and_argument_is_classified``, so a new feature cannot reopen
the hole without someone deciding which side it is on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeDevice, FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.ports import PortInfo
from serial_mcp.store.profiles import ProfileStore
from tests.tool_calls import call, error

pytestmark = pytest.mark.anyio

CID = "{cid}"
# Tools refused whole in read-only mode, with a call that would otherwise act.
REFUSED_TOOLS: dict[str, dict[str, Any]] = {
    "write": {"connection_id": CID, "data": "reboot\n"},
    "transact": {"connection_id": CID, "data": "x"},
    "flush": {"connection_id": CID},
    "capture_boot": {"connection_id": CID, "reset": {"dtr": False}},
    "set_dtr_rts": {"connection_id": CID, "dtr": False},
    "send_break": {"connection_id": CID},
    "set_flow_control": {"connection_id": CID, "flow_control": "software"},
    "reconfigure": {"connection_id": CID, "baud_rate": 9600},
    "reconnect": {"connection_id": CID},
    "detect_baud": {"connection_id": CID, "candidates": [9600], "window_ms": 50},
    "file_transfer": {"connection_id": CID, "direction": "send", "data": "aGk="},
    "save_profile": {"connection_id": CID, "name": "p"},
    "delete_profile": {"name": "p"},
    "configure": {"profile": "p", "defaults": {"baud_rate": 9600}},
    "rollback_profile": {"name": "p", "to_revision": 1},
}
# Arguments that make an otherwise reading tool write; each is refused on its own.
REFUSED_ARGUMENTS: dict[tuple[str, str], dict[str, Any]] = {
    ("read", "respond"): {"connection_id": CID, "timeout_ms": 0, "respond": {"on": "login:", "send": "EVIL\r"}},
    ("open", "mirror"): {"port": "dev2", "mirror": "rw"},
    ("open", "rs485"): {"port": "dev2", "rs485": {}},
    ("open", "respond"): {"port": "dev2", "respond": [{"on": "login:", "send": "root\r"}]},
    ("lend", "action"): {"connection_id": CID, "action": "release"},  # status (the default) only looks
    ("identify", "probe"): {"ports": ["dev2"], "probe": True},  # without it identify only listens
}
# Tools that only read (or write a capture file in the operator's capture directory: monitoring
# is recording) — allowed in read-only mode, with every argument classified as harmless.
READING_TOOLS = {
    "list_ports",
    "identify",
    "list_connections",
    "open",
    "close",
    "get_status",
    "read",
    "get_log",
    "clear_log",
    "export_log",
    "record",
    "list_captures",
    "list_profiles",
    "open_profile",
    "compute_checksum",
    "lend",
}


def _fill(args: dict[str, Any], cid: str) -> dict[str, Any]:
    return {k: (cid if v == CID else v) for k, v in args.items()}


async def _server(tmp_path: Path) -> tuple[Any, FakeDevice, ProfileStore]:
    opener = FakeOpener()
    dev = opener.add("dev")
    opener.add("dev2")
    store = ProfileStore(tmp_path / "profiles.toml")

    def ports() -> list[PortInfo]:  # a well-identified USB device: a bare open would make a profile
        return [PortInfo("dev", "FT232R", None, "0403", "6001", "A10K3Z", "FTDI", "FT232R", None, "1-1", "usb")]

    server = build_server(ConnectionManager(opener), read_only=True, profiles=store, port_lister=ports)
    return server, dev, store


async def test_every_tool_and_argument_is_classified(tmp_path: Path) -> None:
    server, _, _ = await _server(tmp_path)
    async with Client(server) as c:
        tools = {t.name: set(t.input_schema["properties"]) for t in (await c.list_tools()).tools}
    assert set(tools) == set(REFUSED_TOOLS) | READING_TOOLS, "classify the new tool for --read-only"
    writing_args = {(tool, arg) for tool, arg in REFUSED_ARGUMENTS}
    for tool, arg in writing_args:
        assert arg in tools[tool]
    # the reading tools' other arguments were reviewed and do not write; a new one must be added here
    reviewed = {
        "open": {"port", "baud_rate", "data_bits", "parity", "stop_bits", "flow_control", "rx_buffer_size",
                 "protocol", "rx_framing", "tx_framing", "rx_parser", "reconnect", "pace", "record",
                 "profile_mode", "low_latency", "share", "elf"},
        "read": {"connection_id", "from", "cursor", "timeout_ms", "idle_ms", "max_bytes", "match", "encoding",
                 "protocol", "rx_framing", "rx_parser", "max_frames", "strip_ansi", "screen", "frames",
                 "until", "summary", "to", "fields", "reply", "verbose",  # 26: they shape what a read returns
                 "port", "baud_rate"},  # 39: a port opens as open opens it; a baud_rate is open's, never changed
        "lend": {"connection_id", "timeout_ms"},  # timeout_ms without action="release" is refused
        "identify": {"ports", "listen_ms"},  # 39: ports open as open opens them; listening writes nothing
    }
    for tool, harmless in reviewed.items():
        unclassified = tools[tool] - harmless - {a for t, a in writing_args if t == tool}
        assert not unclassified, f"classify {tool}({sorted(unclassified)}) for --read-only"


@pytest.mark.slow
async def test_read_only_refuses_every_writing_tool_and_argument(tmp_path: Path) -> None:
    server, dev, _store = await _server(tmp_path)
    async with Client(server) as c:
        opened = await call(c, "open", {"port": "dev"})
        cid = opened["connection_id"]
        assert opened["profile"] is None  # the identified device got no generated profile...
        assert not (tmp_path / "profiles.toml").exists()  # ...and the store was not written
        for tool, args in REFUSED_TOOLS.items():
            e = await error(c, tool, _fill(args, cid))
            assert e["code"] == "read_only_mode", (tool, e)
        for (tool, arg), args in REFUSED_ARGUMENTS.items():
            e = await error(c, tool, _fill(args, cid))
            assert e["code"] == "read_only_mode", (tool, arg, e)
        dev.feed(b"login: ")
        got = await call(c, "read", {"connection_id": cid, "match": "login:", "timeout_ms": 5000})
        assert got["matched"]
        assert len((await call(c, "list_connections", {}))["connections"]) == 1  # no dev2 opened
    assert bytes(dev.written) == b"" and dev.line_events == [] and len(dev.settings_history) == 1
    assert not (tmp_path / "profiles.toml").exists()
