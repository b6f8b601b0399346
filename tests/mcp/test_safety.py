"""Safety and reach: read-only mode, the allowlist (fail closed, symlink escapes, USB identity), port
resolution by serial number or description, HTTP with bearer auth and DNS-rebinding protection, and
the tools/list budget."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from serial_mcp.core.allowlist import parse_allowlist
from serial_mcp.errors import InvalidArgument
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.policy import GuardedOpener
from serial_mcp.serial.ports import PortInfo
from serial_mcp.serial.system_open import SystemOpener
from tests.pty.devices import PtyDevice, echo
from tests.raw_rpc import INITIALIZE
from tests.tool_calls import call, error

TOOLS_LIST_BUDGET = 34_000  # issues 37, 39 and 41: the bound as the SDK client serialises tools/list


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_tools_list_stays_under_budget(mode: str) -> None:
    async with Client(build_server(ConnectionManager(FakeOpener())), mode=mode) as c:
        tools = (await c.list_tools()).tools
        size = len(json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]))
        print(f"tools/list: {len(tools)} tools, {size} bytes of JSON")
        assert size < TOOLS_LIST_BUDGET


@pytest.mark.anyio
async def test_read_only_mode_refuses_mutations_and_allows_reading() -> None:
    opener = FakeOpener()
    dev = opener.add("dev")
    async with Client(build_server(ConnectionManager(opener), read_only=True)) as c:
        cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
        dev.feed(b"telemetry 42\n")
        assert (await call(c, "read", {"connection_id": cid, "match": "\n", "timeout_ms": 5000}))["matched"]
        await call(c, "get_status", {"connection_id": cid})
        await call(c, "get_log", {"connection_id": cid})
        for tool, args in [
            ("write", {"connection_id": cid, "data": "reboot\n"}),
            ("transact", {"connection_id": cid, "data": "x"}),
            ("set_dtr_rts", {"connection_id": cid, "dtr": False}),
            ("send_break", {"connection_id": cid}),
            ("reconfigure", {"connection_id": cid, "baud_rate": 9600}),
            ("flush", {"connection_id": cid}),
            ("capture_boot", {"connection_id": cid}),
        ]:
            e = await error(c, tool, args)
            assert e["code"] == "read_only_mode", (tool, e)
        assert bytes(dev.written) == b"" and dev.line_events == [] and len(dev.settings_history) == 1


@pytest.mark.parametrize("pattern", ["", "relative/path", "usb:12", "usb:0403:60011", "[abc", "ftp//x", "  "])
def test_invalid_allowlist_patterns_are_errors(pattern: str) -> None:
    with pytest.raises(InvalidArgument):
        parse_allowlist([pattern])
    with pytest.raises(InvalidArgument):
        parse_allowlist([])


@pytest.mark.slow
def test_invalid_allowlist_is_a_startup_error() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "serial_mcp", "--allowlist", "/dev/ttyUSB*,usb:xyz"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode != 0 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1


@pytest.fixture
def ptys() -> Iterator[list[PtyDevice]]:
    made: list[PtyDevice] = []
    yield made
    for d in made:
        d.close()


@pytest.mark.anyio
async def test_allowlist_by_path_glob_resolves_symlinks(ptys: list[PtyDevice], tmp_path: Path) -> None:
    allowed_dev = PtyDevice(echo).start()
    other_dev = PtyDevice(echo).start()
    ptys += [allowed_dev, other_dev]
    safe = tmp_path / "safe"
    safe.mkdir()
    (safe / "bench-a").symlink_to(allowed_dev.path)  # an allowed device behind a friendly name
    (safe / "sneaky").symlink_to(other_dev.path)  # a symlink escape attempt
    patterns = parse_allowlist([f"{safe}/bench-*"])
    opener = GuardedOpener(SystemOpener(), patterns, lambda: [])
    async with Client(build_server(ConnectionManager(opener))) as c:
        e = await error(c, "open", {"port": str(safe / "sneaky")})
        assert e["code"] == "not_allowed" and other_dev.path in e["message"]
        e = await error(c, "open", {"port": other_dev.path})
        assert e["code"] == "not_allowed"
        cid = (await call(c, "open", {"port": str(safe / "bench-a")}))["connection_id"]
        await call(c, "close", {"connection_id": cid})
        cid = (await call(c, "open", {"port": allowed_dev.path}))["connection_id"]  # same device, real name
        assert cid


@pytest.mark.anyio
async def test_allowlist_by_usb_identity_and_urls(ptys: list[PtyDevice]) -> None:
    ftdi, other = PtyDevice(echo).start(), PtyDevice(echo).start()
    ptys += [ftdi, other]

    def ports() -> list[PortInfo]:
        return [
            PortInfo(
                ftdi.path, "FT232R", None, "0403", "6001", "A10K3Z", "FTDI", "FT232R", None, None, "usb"
            ),
            PortInfo(
                other.path, "CP2102", None, "10c4", "ea60", "0001", "SiLabs", "CP2102", None, None, "usb"
            ),
        ]

    opener = GuardedOpener(
        SystemOpener(), parse_allowlist(["usb:0403:6001:A10K3Z", "socket://127.0.0.1:*"]), ports
    )
    async with Client(build_server(ConnectionManager(opener), port_lister=ports)) as c:
        assert (await call(c, "open", {"port": ftdi.path}))["connection_id"]
        assert (await error(c, "open", {"port": other.path}))["code"] == "not_allowed"
        assert (await error(c, "open", {"port": "socket://10.0.0.1:4000"}))["code"] == "not_allowed"
        assert (await error(c, "open", {"port": "sim://modem"}))["code"] == "not_allowed"


@pytest.mark.anyio
async def test_open_by_serial_number_or_description(ptys: list[PtyDevice]) -> None:
    a, b, d = PtyDevice(echo).start(), PtyDevice(echo).start(), PtyDevice(echo).start()
    ptys += [a, b, d]

    def ports() -> list[PortInfo]:
        return [
            PortInfo(
                a.path, "FT232R USB UART", None, "0403", "6001", "A10K3Z", "FTDI", "FT232R", None, None, "usb"
            ),
            PortInfo(
                b.path,
                "CP2102 USB to UART",
                None,
                "10c4",
                "ea60",
                "0001",
                "Silicon Labs",
                None,
                None,
                None,
                "usb",
            ),
            PortInfo(
                d.path,
                "CP2102 USB to UART",
                None,
                "10c4",
                "ea60",
                "0002",
                "Silicon Labs",
                None,
                None,
                None,
                "usb",
            ),
        ]

    async with Client(build_server(ConnectionManager(SystemOpener()), port_lister=ports)) as c:
        r = await call(c, "open", {"port": "A10K3Z"})
        assert r["port"] == a.path
        await call(c, "close", {"connection_id": r["connection_id"]})
        r = await call(c, "open", {"port": "0002"})
        assert r["port"] == d.path
        await call(c, "close", {"connection_id": r["connection_id"]})
        e = await error(c, "open", {"port": "cp2102"})
        assert e["code"] == "port_ambiguous" and b.path in e["message"] and d.path in e["message"]
        r = await call(c, "open", {"port": "ft232r"})  # description fragment, case-insensitive, unique
        assert r["port"] == a.path
        assert (await error(c, "open", {"port": "ft232r"}))[
            "code"
        ] == "port_busy"  # same device, already open


# --- HTTP ---------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def http_server() -> Iterator[tuple[str, str]]:
    port, token = free_port(), "t0ken-for-tests"
    env = {**os.environ, "SERIAL_MCP_TOKEN": token}
    proc = subprocess.Popen(
        [sys.executable, "-m", "serial_mcp", "--transport", "http", "--port", str(port)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while True:  # an external process's listening socket: connect until it answers (bounded)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            if time.monotonic() > deadline:
                pytest.fail("HTTP server did not start")
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp", token
    proc.terminate()
    proc.wait(timeout=30)
    assert proc.stdout is not None and proc.stdout.read() == b"", "nothing on stdout"


INIT = INITIALIZE
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.mark.slow
def test_http_requires_the_bearer_token(http_server: tuple[str, str]) -> None:
    url, token = http_server
    assert httpx2.post(url, json=INIT, headers=HEADERS).status_code == 401
    assert (
        httpx2.post(url, json=INIT, headers={**HEADERS, "Authorization": "Bearer wrong"}).status_code == 401
    )
    ok = httpx2.post(url, json=INIT, headers={**HEADERS, "Authorization": f"Bearer {token}"})
    assert ok.status_code == 200


def test_http_rejects_a_rebinding_host_header(http_server: tuple[str, str]) -> None:
    url, token = http_server
    auth = {**HEADERS, "Authorization": f"Bearer {token}"}
    assert httpx2.post(url, json=INIT, headers={**auth, "Host": "evil.example"}).status_code == 421
    assert httpx2.post(url, json=INIT, headers={**auth, "Origin": "http://evil.example"}).status_code == 403


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_http_both_eras_round_trip(http_server: tuple[str, str], mode: str) -> None:
    url, token = http_server
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as c:
        opened = await call(c, "open", {"port": "sim://echo"})
        cid = opened["connection_id"]
        r = await call(c, "transact", {"connection_id": cid, "data": "over http\n", "match": "\n"})
        assert r["read"]["data"] == "over http\n"
        await call(c, "close", {"connection_id": cid})


@pytest.mark.slow
def test_non_loopback_http_without_token_refuses_to_start() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "serial_mcp", "--transport", "http", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env={k: v for k, v in os.environ.items() if k != "SERIAL_MCP_TOKEN"},
    )
    assert r.returncode == 2 and r.stdout == "" and "auth-token" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
