"""Issue 28, "every front door, one policy": the attacks of the second hostile round on the doors
beside the MCP server (the CLI commands, the Python API) and on what they leave behind.

- 28.11: every command that opens a port enforces ``--read-only`` and ``--allowlist``, from a flag,
  the environment or a config file, exactly as the server does; ``Engine(allowlist=…,
  enable_url_schemes=…)`` beside ``read_only``.
- 28.12: a credential in a port URL is never repeated in an error, a result or a log line.
- 28.16: a ``SyncEngine`` dropped without ``close()`` is finalized; a ``sim://`` device keeps a
  bounded tail of what was written.
"""

from __future__ import annotations

import argparse
import gc
import os
import signal
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from serial_mcp.cli import build_parser
from tests.liveness import StdioServer
from tests.pty.devices import PtyDevice

if not sys.platform.startswith("linux"):
    pytest.skip("the door tests drive a device on a Linux PTY", allow_module_level=True)

CAPTURES = Path(__file__).parents[2] / "captures"
NOPE = "/dev/ttyNOPE*"  # an allowlist that admits no port of this machine


# --- 28.11: every door, one policy ------------------------------------------------------------------


@dataclass(frozen=True)
class Policy:
    """One setting given one way: as flags before the command, in the environment, or in a config file."""

    args: tuple[str, ...]
    env: dict[str, str]


def policy(setting: str, source: str, tmp_path: Path) -> Policy:
    """``setting`` ("read_only" or "allowlist") set from ``source`` ("flag", "env" or "file")."""
    if source == "flag":
        return Policy(("--read-only",) if setting == "read_only" else ("--allowlist", NOPE), {})
    if source == "env":
        env = {"SERIAL_MCP_READ_ONLY": "1"} if setting == "read_only" else {"SERIAL_MCP_ALLOWLIST": NOPE}
        return Policy((), env)
    path = tmp_path / "serial-mcp.toml"
    path.write_text("read_only = true\n" if setting == "read_only" else f'allowlist = ["{NOPE}"]\n')
    return Policy(("--config", str(path)), {})


@dataclass
class Outcome:
    returncode: int
    stdout: bytes
    stderr: bytes

    @property
    def said(self) -> str:
        return (self.stdout + self.stderr).decode(errors="replace")


def command_env(extra: dict[str, str]) -> dict[str, str]:
    """This environment without any SERIAL_MCP_* setting of the outside, plus ``extra``."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("SERIAL_MCP_")}, **extra}


def run_command(args: list[str], pol: Policy, *, holds: bool = False) -> Outcome:
    """``serial-mcp <policy flags> <args>``. A command that ``holds`` the port until Ctrl-C (record,
    mirror) says one status line when it has opened it: then it gets its Ctrl-C."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "serial_mcp", *pol.args, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=command_env(pol.env),
    )
    first = b""
    if holds:
        assert proc.stderr is not None
        first = proc.stderr.readline()  # the refusal (then it exits), or "recording …" / "mirroring …"
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return Outcome(proc.returncode, out, first + err)


def answering(data: bytes) -> bytes | None:
    """A device that says OK to every line (so a door that does write gets on quickly)."""
    return b"\r\nOK\r\n" if b"\r" in data else None


@pytest.fixture
def device() -> Iterator[PtyDevice]:
    dev = PtyDevice(answering).start()
    yield dev
    dev.close()


# How each command that opens a port is run against the device; ``write`` is how it would put a
# byte on the wire (for the read-only check), or why it never does.
Run = Callable[[PtyDevice, Policy, Path], Outcome]


def serve_open(dev: PtyDevice, pol: Policy, tmp: Path, *, write: bool) -> Outcome:
    with StdioServer(*pol.args, env=pol.env) as srv:
        opened = srv.call_raw("open", {"port": dev.path})
        said = [opened]
        if write and not opened.get("isError"):
            cid = opened["structuredContent"]["connection_id"]
            said.append(srv.call_raw("write", {"connection_id": cid, "data": "x"}))
        text = "\n".join(str(r.get("content")) for r in said)
        failed = any(r.get("isError") for r in said)
    return Outcome(1 if failed else 0, text.encode(), b"")


def _mirror(dev: PtyDevice, pol: Policy, tmp: Path, *extra: str) -> Outcome:
    return run_command(["mirror", dev.path, *extra], pol, holds=True)


OPENS_A_PORT: dict[str, Run] = {
    "serve": lambda dev, pol, tmp: serve_open(dev, pol, tmp, write=False),
    "send": lambda dev, pol, tmp: run_command(["send", dev.path, r"AT\r", "--timeout-ms", "300"], pol),
    "read": lambda dev, pol, tmp: run_command(["read", dev.path, "--timeout-ms", "300"], pol),
    "record": lambda dev, pol, tmp: run_command(
        ["record", dev.path, "-o", str(tmp / "door.jsonl")], pol, holds=True
    ),
    "mirror": _mirror,
    "replay": lambda dev, pol, tmp: run_command(
        ["replay", str(CAPTURES / "uboot-mt7622.jsonl"), "--mode", "instant"], pol
    ),
    "demo": lambda dev, pol, tmp: run_command(["demo", "--port", dev.path], pol),
    "identify": lambda dev, pol, tmp: run_command(["identify", dev.path, "--listen-ms", "200"], pol),
}
WRITES: dict[str, Run | str] = {
    "serve": lambda dev, pol, tmp: serve_open(dev, pol, tmp, write=True),
    "send": OPENS_A_PORT["send"],
    "mirror": lambda dev, pol, tmp: _mirror(dev, pol, tmp, "--rw"),
    "demo": OPENS_A_PORT["demo"],
    "identify": lambda dev, pol, tmp: run_command(
        ["identify", dev.path, "--listen-ms", "200", "--probe"], pol
    ),
    "read": "reads only",
    "record": "reads only",
    "replay": "plays a capture file; no device is written",
}
OPENS_NO_PORT = {
    "ports": "lists the ports, opens none",
    "decode": "decodes a capture file offline",
    "view": "renders a capture file offline",
}


def subcommands() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def test_every_command_is_classified() -> None:
    """A new command fails here until it is listed: with how it opens a port (and then it is
    checked against both policies below) or why it opens none."""
    assert set(OPENS_A_PORT) | set(OPENS_NO_PORT) == subcommands()
    assert not set(OPENS_A_PORT) & set(OPENS_NO_PORT)
    assert set(WRITES) == set(OPENS_A_PORT)


SOURCES = ("flag", "env", "file")


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("command", sorted(OPENS_A_PORT))
def test_the_allowlist_holds_at_every_door(
    command: str, source: str, device: PtyDevice, tmp_path: Path
) -> None:
    r = OPENS_A_PORT[command](device, policy("allowlist", source, tmp_path), tmp_path)
    assert r.returncode != 0, r.said
    assert "allowlist" in r.said, r.said
    assert bytes(device.received) == b""
    assert not (tmp_path / "door.jsonl").exists()  # record: refused before a file was made


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("command", sorted(c for c, w in WRITES.items() if not isinstance(w, str)))
def test_read_only_holds_at_every_door(command: str, source: str, device: PtyDevice, tmp_path: Path) -> None:
    run = WRITES[command]
    assert not isinstance(run, str)
    r = run(device, policy("read_only", source, tmp_path), tmp_path)
    assert r.returncode != 0, r.said
    assert "read-only" in r.said, r.said
    assert bytes(device.received) == b""


def test_send_refuses_in_read_only_mode_before_opening_the_port(device: PtyDevice) -> None:
    """Opening a port can reset a board (DTR): a send that may not write does not open it at all."""
    r = run_command(["send", "/dev/serial-mcp-no-such-port", "x"], Policy(("--read-only",), {}))
    assert r.returncode == 3 and "read-only" in r.said and "does not exist" not in r.said, r.said


@pytest.mark.parametrize("command", ["send", "record", "mirror"])
def test_a_bad_allowlist_stops_a_command_as_it_stops_the_server(
    command: str, device: PtyDevice, tmp_path: Path
) -> None:
    """Fail closed: a pattern that is no pattern is a settings error (exit 2), never "allow all"."""
    args = {"send": [device.path, "x"], "record": [device.path, "-o", str(tmp_path / "door.jsonl")]}
    r = run_command([command, *args.get(command, [device.path])], Policy(("--allowlist", "ttyUSB0"), {}))
    assert r.returncode == 2 and "allowlist pattern" in r.said, r.said
    assert bytes(device.received) == b"" and not (tmp_path / "door.jsonl").exists()


@pytest.mark.anyio
async def test_the_api_takes_the_allowlist(device: PtyDevice) -> None:
    from serial_mcp import AccessError, Engine

    async with Engine(allowlist=[NOPE]) as eng:
        with pytest.raises(AccessError) as refused:
            await eng.open(device.path)
    assert refused.value.code == "not_allowed" and "allowlist" in refused.value.message
    async with Engine(allowlist=[device.path]) as eng:  # admitted: the same guard lets it through
        conn = await eng.open(device.path)
        await conn.transact("AT\r", match="OK")
    assert bytes(device.received) == b"AT\r"


@pytest.mark.anyio
async def test_the_api_takes_enabled_url_schemes(device: PtyDevice, tmp_path: Path) -> None:
    from serial_mcp import AccessError, Engine

    dump = tmp_path / "spy.txt"
    url = f"spy://{device.path}?file={dump}"
    async with Engine() as eng:
        with pytest.raises(AccessError):
            await eng.open(url)
    assert not dump.exists()
    async with Engine(enable_url_schemes=["spy"]) as eng:
        conn = await eng.open(url)
        await conn.transact("AT\r", match="OK")
    assert bytes(device.received) == b"AT\r" and dump.is_file()


def test_the_sync_api_takes_the_same_policy(device: PtyDevice) -> None:
    from serial_mcp import AccessError, SyncEngine

    with SyncEngine(allowlist=[NOPE]) as eng, pytest.raises(AccessError):
        eng.open(device.path)
    with SyncEngine(read_only=True, allowlist=[device.path]) as eng:
        conn = eng.open(device.path)
        with pytest.raises(AccessError) as refused:
            conn.write("x")
    assert refused.value.code == "read_only_mode" and bytes(device.received) == b""


@pytest.mark.parametrize(
    "options",
    [
        {"allowlist": []},  # allows nothing by accident of typing, or everything by accident of code
        {"allowlist": "/dev/ttyUSB*"},  # a string, not a list: never taken character by character
        {"allowlist": ["ttyUSB0"]},  # not a pattern
        {"enable_url_schemes": ["no scheme"]},
        {"enable_url_schemes": "spy"},
    ],
)
def test_a_bad_policy_is_refused_at_construction(options: dict[str, object]) -> None:
    from serial_mcp import Engine, InvalidArgument

    with pytest.raises(InvalidArgument):
        Engine(**options)  # type: ignore[arg-type]


def test_enabled_schemes_with_an_opener_of_ones_own_are_refused() -> None:
    """The schemes configure the default opener; with another one they would be dropped in silence."""
    from serial_mcp import Engine, InvalidArgument
    from serial_mcp.api import local_opener

    with pytest.raises(InvalidArgument):
        Engine(opener=local_opener(), enable_url_schemes=["spy"])


# --- 28.12: a credential in a port URL is never repeated ----------------------------------------------

SECRET = "hunter2"


@pytest.mark.parametrize(
    ("port", "shown"),
    [
        ("socket://admin:hunter2@10.0.0.5:4000", "socket://***@10.0.0.5:4000"),
        ("rfc2217://user:hunter2@bench:2217?timeout=3", "rfc2217://***@bench:2217?timeout=3"),
        (
            "socket://10.0.0.5:4000?password=hunter2&logging=debug",
            "socket://10.0.0.5:4000?password=***&logging=debug",
        ),
        (
            "vendor://bench-7/ttyS0?token=hunter2&mode=x#hunter2",
            "vendor://bench-7/ttyS0?token=***&mode=***#***",
        ),
        ("spy://socket://admin:hunter2@h:1?file=/tmp/hunter2", "spy://socket://***@h:1?file=***"),
        ("socket://a:b/hunter2@h:1", "socket://***@h:1"),  # however odd the user part, all of it goes
        # nothing to hide: the names stay exactly as given (status, list_connections, busy checks)
        ("/dev/ttyUSB0", "/dev/ttyUSB0"),
        (
            "replay://boot.jsonl?mode=respond&speed=2&loop=true",
            "replay://boot.jsonl?mode=respond&speed=2&loop=true",
        ),
        ("replay:///home/me@lab/boot.jsonl", "replay:///home/me@lab/boot.jsonl"),  # a path, no user part
        ("sim://reboot-board?bootdelay=1", "sim://reboot-board?bootdelay=1"),
        ("socket://10.0.0.5:4000?logging=debug", "socket://10.0.0.5:4000?logging=debug"),
        ("loop://", "loop://"),
    ],
)
def test_redact_hides_user_parts_and_option_values(port: str, shown: str) -> None:
    from serial_mcp.core.port_url import redact

    assert redact(port) == shown


def leaks(*texts: object) -> list[str]:
    return [str(t) for t in texts if SECRET in str(t)]


def test_failing_opens_never_repeat_a_credential() -> None:
    """Over stdio, logging everything: the error text, the result and the server's stderr."""
    urls = [
        "socket://admin:hunter2@127.0.0.1:1",  # refused by our URL check (a user@ part)
        "rfc2217://user:hunter2@127.0.0.1:1",
        "socket://127.0.0.1:1?password=hunter2",  # refused: an option socket:// does not take
        "socket://127.0.0.1:1?token=hunter2",
        "spy://socket://admin:hunter2@127.0.0.1:1",  # enabled: pyserial's own error repeats the URL
        "spy://loop://?file=/dev/null&token=hunter2",
    ]
    with StdioServer("--log-level", "DEBUG", "--enable-url-scheme", "spy") as srv:
        answers = [srv.call_raw("open", {"port": url}) for url in urls]
        listed = srv.call("list_connections", {})
        logged = srv.stderr()
    for url, answer in zip(urls, answers, strict=True):
        assert answer.get("isError"), (url, answer)
        assert not leaks(answer), (url, answer)
        assert "***" in str(answer), answer  # the port is still named, without the secret
    assert listed["connections"] == []
    assert logged and not leaks(logged), logged


@pytest.mark.anyio
async def test_an_open_port_never_shows_its_credential(caplog: pytest.LogCaptureFixture) -> None:
    """A port whose URL holds a credential (an operator-enabled scheme, here a fake one): opened,
    listed, read, written, reconnected, refused as busy, closed — no result, error or log repeats it,
    and the connection still reopens with the real URL."""
    import logging

    from mcp import Client

    from serial_mcp.mcp.server import build_server
    from serial_mcp.serial.fake import FakeOpener
    from serial_mcp.serial.manager import ConnectionManager
    from tests.tool_calls import call, error

    url = "vendor://admin:hunter2@bench-7:4000?token=hunter2"
    opener = FakeOpener()
    dev = opener.add(url, lambda data: data)
    said: list[object] = []
    caplog.set_level(logging.DEBUG)
    async with Client(build_server(ConnectionManager(opener), port_lister=list)) as c:
        opened = await call(c, "open", {"port": url})
        cid = opened["connection_id"]
        said.append(opened)
        said.append(await c.call_tool("transact", {"connection_id": cid, "data": "ping", "match": "ping"}))
        said.append(await c.call_tool("get_status", {"connection_id": url}))  # by its real name, still found
        said.append(await c.call_tool("list_connections", {}))
        said.append(await c.call_tool("list_ports", {}))
        said.append(await error(c, "open", {"port": url}))  # busy: the same port, however it is shown
        dev.unplug(gone=False)
        said.append(await c.call_tool("reconnect", {"connection_id": cid}))
        said.append(await c.call_tool("get_log", {"connection_id": cid}))
        said.append(await c.call_tool("close", {"connection_id": cid}))
    assert opened["port"] == "vendor://***@bench-7:4000?token=***"
    assert dev.opens == 2 and bytes(dev.written) == b"ping"  # reopened by the URL as given
    assert not leaks(*said), leaks(*said)
    assert not leaks(*(r.getMessage() for r in caplog.records)), caplog.text


def test_the_cli_never_repeats_a_credential(device: PtyDevice, tmp_path: Path) -> None:
    failed = run_command(["send", "socket://admin:hunter2@127.0.0.1:1", "x", "--json"], Policy((), {}))
    assert failed.returncode in (2, 3) and not leaks(failed.said), failed.said
    capture = tmp_path / "bench.jsonl"
    recorded = run_command(
        ["record", f"spy://{device.path}?file={tmp_path / SECRET}", "-o", str(capture)],
        Policy(("--enable-url-scheme", "spy"), {}),
        holds=True,
    )
    assert recorded.returncode == 0, recorded.said
    assert "recording spy://" in recorded.said and not leaks(recorded.said), recorded.said
    assert capture.is_file() and SECRET not in capture.read_text()


# --- 28.16: what a dropped engine and a simulated device leave behind ---------------------------------


def test_a_dropped_sync_engine_gives_back_its_threads_and_ports() -> None:
    """20 engines dropped without close() used to leave 40 threads (a loop and a pump each) and
    their ports open; now each is finalized (with a ResourceWarning, as an unclosed file is)."""
    from serial_mcp import SyncEngine
    from serial_mcp.serial.fake import FakeOpener

    opener = FakeOpener()
    devices = [opener.add(f"fake{i}") for i in range(20)]
    gc.collect()  # what earlier tests of this worker left is finalized now, not counted below
    before = set(threading.enumerate())  # a thread an earlier test left to end may end meanwhile
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for dev in devices:
            eng = SyncEngine(opener=opener)
            eng.open(dev.name)
            del eng
        gc.collect()
        with SyncEngine(opener=opener) as closed:  # closed as it should be: no warning
            closed.open("fake0")
        del closed
        gc.collect()
    left = set(threading.enumerate()) - before
    assert not left, [t.name for t in left]  # none of the engines' threads outlives it
    assert all(dev.closed for dev in devices)
    assert [w.category for w in caught] == [ResourceWarning] * 20, [str(w.message) for w in caught]


def test_a_sync_engine_that_fails_to_start_leaves_no_thread() -> None:
    from serial_mcp import InvalidArgument, SyncEngine

    before = set(threading.enumerate())
    with pytest.raises(InvalidArgument):
        SyncEngine(allowlist=[])
    with pytest.raises(TypeError):
        SyncEngine(no_such_option=1)  # type: ignore[call-arg]  # mypy rejects it too
    left = set(threading.enumerate()) - before
    assert not left, [t.name for t in left]


def held_while(work: Callable[[], object]) -> int:
    """Bytes still allocated (traced) once ``work`` is done, of what it allocated."""
    import tracemalloc

    tracemalloc.start()
    try:
        keep = work()
        held, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del keep
    return held


MIB = 1 << 20


@pytest.mark.parametrize("kind", ["echo", "modem", "slow-modem", "reboot-board"])
def test_a_sim_device_keeps_a_bounded_tail_of_what_was_written(kind: str) -> None:
    """80 MB written to a sim:// device used to stay in memory (+157 MiB) until close; what it
    keeps of the writes, and of a command line that never ends, is bounded now. (MicroPython's
    simulator, sim/micropython.py, shares the device base and is covered by its own tests.)"""
    from serial_mcp.core.settings import SerialSettings
    from serial_mcp.serial.sim import SimOpener

    handle = SimOpener().open(f"sim://{kind}", SerialSettings())
    chunk = b"x" * 65536  # no line end: a modem's command line would grow with it

    def write_4_mib() -> object:
        for _ in range(64):
            handle.write(chunk)
            handle.reset_input()  # what the host would read (echoes): not the device's to keep
        return handle

    try:
        held = held_while(write_4_mib)
    finally:
        handle.close()
    assert held < MIB, f"sim://{kind} kept {held} bytes of 4 MiB written"


def test_a_modem_still_answers_after_an_endless_line() -> None:
    from serial_mcp.core.settings import SerialSettings
    from serial_mcp.serial.sim import SimOpener

    handle = SimOpener().open("sim://modem", SerialSettings())
    try:
        handle.reset_input()
        handle.write(b"A" * 1_000_000 + b"\r")
        handle.write(b"AT\r")
        assert handle.read_chunk() == b"\r\nERROR\r\n\r\nOK\r\n"  # the overlong line is refused whole
        assert len(handle.device.written) <= 2 * 65536 and len(handle.device.writes) <= 2
    finally:
        handle.close()
