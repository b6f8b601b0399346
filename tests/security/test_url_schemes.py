"""Only the URL schemes we offer reach an opener: pyserial's ``spy://`` (writes a hex dump to any
``?file=``), ``hwgrep://``, ``alt://`` and unknown schemes are refused with ``not_allowed`` before
``serial_for_url`` runs, in read-only mode too, unless the operator enables a scheme by name.
URL options are checked by us: only those pyserial documents for the scheme pass."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import serial
from mcp import Client, StdioServerParameters

from serial_mcp import config
from serial_mcp.cli import build_parser
from serial_mcp.core.port_url import parse_port
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import InvalidArgument, SerialMcpError
from serial_mcp.serial.system_open import SystemOpener
from tests.pty.devices import PtyDevice, echo
from tests.raw_rpc import server_env
from tests.security.openers import production_server
from tests.tool_calls import call, error

PRECIOUS = "do not truncate me\n"
SPY_ATTACKS = [
    "spy://loop://?file={f}",
    "SPY://loop://?file={f}",
    "spy://loop://?file={f}&color&raw",
    "spy:///dev/null?file={f}",
]
REFUSED = [
    "hwgrep://.*",
    "hwgrep://ttyUSB&skip_busy",
    "alt://loop://?class=PosixPollSerial",
    "cp2110://0001:0002:00",
    "ftp://example.invalid/x",
    "file:///etc/passwd",
    " spy://loop://",
    "/tmp/x?spy://loop://",
]


@pytest.fixture
def precious(tmp_path: Path) -> Path:
    path = tmp_path / "precious.txt"
    path.write_text(PRECIOUS)
    return path


@pytest.fixture
def opened_urls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every URL that reaches pyserial's ``serial_for_url``."""
    seen: list[str] = []
    real = serial.serial_for_url

    def recording(url: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(url)
        return real(url, *args, **kwargs)

    monkeypatch.setattr(serial, "serial_for_url", recording)
    return seen


# --- the attack, through the real open tool ------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("read_only", [False, True])
@pytest.mark.parametrize("template", SPY_ATTACKS)
@pytest.mark.slow
async def test_spy_urls_never_create_or_truncate_a_file(
    tmp_path: Path, precious: Path, opened_urls: list[str], template: str, read_only: bool
) -> None:
    fresh = tmp_path / "authorized_keys"
    async with Client(production_server(tmp_path, read_only=read_only)) as c:
        for target in (precious, fresh):
            e = await error(c, "open", {"port": template.format(f=target)})
            assert e["code"] == "not_allowed", e
            assert "--enable-url-scheme spy" in e["message"]
    assert precious.read_text() == PRECIOUS
    assert not fresh.exists()
    assert opened_urls == []  # refused before pyserial saw it


@pytest.mark.anyio
@pytest.mark.parametrize("port", REFUSED)
@pytest.mark.slow
async def test_other_handlers_and_unknown_schemes_are_refused_before_pyserial(
    port: str, opened_urls: list[str]
) -> None:
    async with Client(production_server()) as c:
        assert (await error(c, "open", {"port": port}))["code"] == "not_allowed"
    assert opened_urls == []


@pytest.mark.parametrize("port", [*REFUSED, "spy://loop://", "replay://x.jsonl", "sim://echo"])
def test_the_system_opener_refuses_them_too(port: str, opened_urls: list[str]) -> None:
    """Defence in depth: a ``SystemOpener`` used directly (tests, other wiring) applies the same policy,
    and never hands replay:// or sim:// to a pyserial handler (an unconfined replay)."""
    with pytest.raises(SerialMcpError) as info:
        SystemOpener().open(port, SerialSettings())
    assert info.value.code == "not_allowed"
    assert opened_urls == []


@pytest.fixture
def device() -> Iterator[PtyDevice]:
    dev = PtyDevice(echo).start()
    yield dev
    dev.close()


@pytest.mark.anyio
async def test_an_operator_enabled_scheme_is_passed_on(tmp_path: Path, device: PtyDevice) -> None:
    """The escape hatch works: with spy enabled, the hex dump lands where asked."""
    dump = tmp_path / "dump.txt"
    async with Client(production_server(enabled_schemes=frozenset({"spy"}))) as c:
        cid = (await call(c, "open", {"port": f"spy://{device.path}?file={dump}"}))["connection_id"]
        await call(c, "write", {"connection_id": cid, "data": "hi"})
        await call(c, "close", {"connection_id": cid})
    assert "68 69" in dump.read_text()  # "hi"


# --- a real serial-mcp process over stdio, as a hostile client meets it ----------------------------------


def _stdio(*flags: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "serial_mcp", *flags], env=server_env(**(env or {}))
    )


@pytest.mark.anyio
@pytest.mark.stdio
@pytest.mark.slow
async def test_spy_over_stdio_in_read_only_mode(tmp_path: Path, precious: Path) -> None:
    async with Client(_stdio("--read-only"), read_timeout_seconds=60) as c:
        r = await c.call_tool("open", {"port": f"spy://loop://?file={precious}"})
        assert r.is_error and r.structured_content["error"]["code"] == "not_allowed"
    assert precious.read_text() == PRECIOUS


@pytest.mark.anyio
@pytest.mark.stdio
@pytest.mark.slow
async def test_the_enable_setting_reaches_the_server(tmp_path: Path, device: PtyDevice) -> None:
    dump = tmp_path / "dump.txt"
    async with Client(_stdio(env={"SERIAL_MCP_ENABLE_URL_SCHEMES": "spy"}), read_timeout_seconds=60) as c:
        r = await c.call_tool("open", {"port": f"spy://{device.path}?file={dump}"})
        assert not r.is_error, r.content
    assert dump.exists()


# --- the setting -----------------------------------------------------------------------------------------


def test_enable_url_scheme_from_flags_environment_and_config_file(tmp_path: Path) -> None:
    parser = build_parser()
    flags = parser.parse_args(["--enable-url-scheme", "spy", "--enable-url-scheme", "HWGREP://"])
    assert config.resolve(flags, {}).enable_url_schemes == ("spy", "hwgrep")
    env = {"SERIAL_MCP_ENABLE_URL_SCHEMES": "spy, alt"}
    assert config.resolve(parser.parse_args([]), env).enable_url_schemes == ("spy", "alt")
    toml = tmp_path / "serial-mcp.toml"
    toml.write_text('enable_url_schemes = ["alt"]\n')
    assert config.resolve(parser.parse_args(["--config", str(toml)]), {}).enable_url_schemes == ("alt",)
    assert config.resolve(parser.parse_args([]), {}).enable_url_schemes == ()


@pytest.mark.parametrize("bad", ["sp y", "1spy", "spy:", "a/b"])
def test_a_bad_scheme_name_is_a_startup_error(bad: str) -> None:
    with pytest.raises(config.ConfigError):
        config.resolve(build_parser().parse_args(["--enable-url-scheme", bad]), {})
    r = subprocess.run(
        [sys.executable, "-m", "serial_mcp", "--enable-url-scheme", bad],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1


# --- URL options: parsed and checked by us -------------------------------------------------------------


@pytest.mark.parametrize(
    ("port", "opened"),
    [
        ("socket://127.0.0.1:4000", "socket://127.0.0.1:4000"),
        ("socket://Bench.LAN:4000/", "socket://bench.lan:4000"),
        ("socket://127.0.0.1:4000?logging=DEBUG", "socket://127.0.0.1:4000?logging=debug"),
        ("socket://[::1]:4000", "socket://[::1]:4000"),
        (
            "rfc2217://h:2217?ign_set_control&poll_modem&timeout=5",
            "rfc2217://h:2217?ign_set_control&poll_modem&timeout=5.0",
        ),
        ("rfc2217://h:2217?logging=info", "rfc2217://h:2217?logging=info"),
        ("loop://", "loop://"),
        ("loop://?logging=warning", "loop://?logging=warning"),
        ("/dev/ttyUSB0", "/dev/ttyUSB0"),
    ],
)
def test_documented_options_pass_rebuilt(port: str, opened: str) -> None:
    assert parse_port(port).open_name == opened


@pytest.mark.parametrize(
    "port",
    [
        "socket://127.0.0.1:4000?file=/tmp/x",
        "socket://127.0.0.1:4000?ign_set_control",  # an rfc2217 option
        "socket://127.0.0.1:4000?logging=trace",
        "socket://127.0.0.1:4000?logging=debug&logging=info",
        "rfc2217://h:2217?ign_set_control=false",
        "rfc2217://h:2217?timeout=nan",
        "rfc2217://h:2217?timeout=-1",
        "rfc2217://h:2217?timeout=1e9",
        "loop://?file=/tmp/x",
        "loop://somewhere",
        "socket://127.0.0.1",
        "socket://127.0.0.1:0",
        "socket://127.0.0.1:99999",
        "socket://127.0.0.1:http",
        "socket://127.0.0.1:4000/path",
        "socket://127.0.0.1:4000#x",
        "socket://user@127.0.0.1:4000",
        "socket://h%2f:4000",
        "socket://[not-v6]:4000",
        "socket://:4000",
        "socket://127.0.0.1:4000\n",
        "/dev/ttyUSB0\x00",
        "/dev/tty\ud800",
    ],
)
def test_unknown_options_and_malformed_urls_are_invalid_arguments(port: str) -> None:
    with pytest.raises(InvalidArgument):
        parse_port(port)


@pytest.mark.anyio
@pytest.mark.slow
async def test_options_are_checked_before_anything_opens(opened_urls: list[str]) -> None:
    async with Client(production_server()) as c:
        for port in ("loop://?file=/tmp/x", "socket://127.0.0.1:9?logging=trace", "replay://x.jsonl?file=y"):
            assert (await error(c, "open", {"port": port}))["code"] == "invalid_argument"
        cid = (await call(c, "open", {"port": "loop://?logging=error"}))["connection_id"]
        await call(c, "close", {"connection_id": cid})
    assert opened_urls == ["loop://?logging=error"]
