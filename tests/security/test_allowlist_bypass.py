"""The allowlist judges what will be opened, not the string that was typed: network URLs on the host
and port pyserial connects to (``user@`` refused), files on their normalised real path, and a device
by the very file that was judged (the name is never looked up twice, so a symlink flipped between the
check and the open cannot reach another device)."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import serial
from mcp import Client

from serial_mcp.core.allowlist import PortFacts, allowed, parse_allowlist, parse_pattern
from serial_mcp.core.capture import CaptureEvent, CaptureHeader, capture_text
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import InvalidArgument, SerialMcpError
from serial_mcp.serial.judged import JudgedPath
from serial_mcp.serial.policy import GuardedOpener
from serial_mcp.serial.system_open import SystemOpener
from tests.pty.devices import PtyDevice, echo
from tests.security.openers import production_server
from tests.tool_calls import call, error


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP port on 127.0.0.1 that records connections (a non-blocking accept tells if one came)."""
    srv = socket.create_server(("127.0.0.1", 0))
    srv.setblocking(False)
    yield srv
    srv.close()


def connected(srv: socket.socket) -> bool:
    try:
        conn, _ = srv.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


# --- network URLs: the parsed host and port -----------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    "template",
    [
        "socket://allowed.invalid:1@127.0.0.1:{port}",
        "socket://allowed.invalid:*@127.0.0.1:{port}",
        "socket://allowed.invalid@127.0.0.1:{port}",
        "rfc2217://allowed.invalid:1@127.0.0.1:{port}",
    ],
)
@pytest.mark.slow
async def test_userinfo_cannot_smuggle_another_host(listener: socket.socket, template: str) -> None:
    port = listener.getsockname()[1]
    server = production_server(allowlist=["socket://allowed.invalid:*", "rfc2217://allowed.invalid:*"])
    async with Client(server) as c:
        e = await error(c, "open", {"port": template.format(port=port)})
        assert e["code"] in ("invalid_argument", "not_allowed"), e
    assert not connected(listener)  # the old glob matched the string and connected to 127.0.0.1


@pytest.mark.anyio
@pytest.mark.slow
async def test_an_allowed_host_still_opens_and_the_judged_url_is_what_connects(
    listener: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []
    real = serial.serial_for_url

    def recording(url: str, *args: Any, **kwargs: Any) -> Any:
        opened.append(url)
        return real(url, *args, **kwargs)

    monkeypatch.setattr(serial, "serial_for_url", recording)
    port = listener.getsockname()[1]
    async with Client(production_server(allowlist=["socket://127.0.0.1:*"])) as c:
        assert (await error(c, "open", {"port": f"socket://10.0.0.1:{port}"}))["code"] == "not_allowed"
        cid = (await call(c, "open", {"port": f"SOCKET://127.0.0.1:{port}/?logging=error"}))["connection_id"]
        assert connected(listener)
        await call(c, "close", {"connection_id": cid})
    assert opened == [f"socket://127.0.0.1:{port}?logging=error"]


@pytest.mark.parametrize(
    ("pattern", "port", "admitted"),
    [
        ("socket://127.0.0.*:*", "socket://127.0.0.1:4000", True),
        ("socket://127.0.0.*:*", "socket://127.0.0.1.nip.io:4000", False),  # DNS could point anywhere
        ("socket://192.168.1.*:*", "socket://192.168.1.010:4000", False),  # not written plainly
        ("socket://bench-*.lan:2000", "socket://bench-3.lan:2000", True),
        ("socket://bench-*.lan:2000", "socket://bench-3.lan:2001", False),
        ("socket://bench-*.lan:2000", "rfc2217://bench-3.lan:2000", False),
        ("socket://[::1]:*", "socket://[0:0::1]:4000", True),
        ("socket://[::1]:*", "socket://[::2]:4000", False),
        ("socket://Allowed.Invalid:*", "socket://ALLOWED.invalid:9", True),
    ],
)
def test_network_patterns_judge_host_and_port(pattern: str, port: str, admitted: bool) -> None:
    guard = GuardedOpener(SystemOpener(), parse_allowlist([pattern]), list)
    if admitted:
        assert guard.judge(port).startswith(port.partition(":")[0].lower())
    else:
        with pytest.raises(SerialMcpError) as info:
            guard.judge(port)
        assert info.value.code == "not_allowed"


@pytest.mark.parametrize(
    "pattern",
    ["socket://u@h:*", "socket://h:*/path", "socket://h:*?logging=debug", "socket://h", "socket://[zz]:1"],
)
def test_network_patterns_are_parsed_strictly(pattern: str) -> None:
    with pytest.raises(InvalidArgument):
        parse_pattern(pattern)


def test_path_and_usb_patterns_judge_device_paths_only() -> None:
    """A replay or URL whose facts happen to carry a real path is not admitted by a path glob."""
    patterns = parse_allowlist(["/tmp/*"])
    assert allowed(patterns, PortFacts("/tmp/x", "/tmp/x"))
    assert not allowed(patterns, PortFacts("replay:///tmp/x", "/tmp/x", scheme="replay"))


# --- files: the normalised real path -----------------------------------------------------------------


def write_capture(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    header = CaptureHeader(created="2026-11-30T10:00:00.000000Z")
    path.write_text(capture_text(header, [CaptureEvent(0.0, "rx", data)]))
    return path


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """work/ (the cwd) holding safe/ok.jsonl; outside/secret.jsonl next to it; a link out of safe/."""
    work = tmp_path / "work"
    write_capture(work / "safe" / "ok.jsonl", b"fine")
    write_capture(tmp_path / "outside" / "secret.jsonl", b"top secret")
    (work / "safe" / "link.jsonl").symlink_to(tmp_path / "outside" / "secret.jsonl")
    monkeypatch.chdir(work)
    return tmp_path


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("port", "code"),
    [
        ("replay://safe/../../outside/secret.jsonl?mode=instant", "not_allowed"),
        ("replay://safe/../../outside/missing.jsonl?mode=instant", "not_allowed"),
        ("replay://safe/%2e%2e/%2e%2e/outside/secret.jsonl?mode=instant", "not_allowed"),
        ("replay://{tmp}/outside/secret.jsonl?mode=instant", "not_allowed"),
        ("replay://{tmp}/work/safe/../../outside/secret.jsonl?mode=instant", "not_allowed"),
        # the link's target is not admitted; the one admitted reading of the name (captures/safe/...)
        # does not exist
        ("replay://safe/link.jsonl?mode=instant", "port_not_found"),
    ],
)
@pytest.mark.slow
async def test_replay_paths_are_judged_on_their_real_path(layout: Path, port: str, code: str) -> None:
    async with Client(production_server(allowlist=["replay://safe/*"])) as c:
        e = await error(c, "open", {"port": port.format(tmp=layout)})
        assert e["code"] == code, e
        if code == "not_allowed" and "{tmp}" not in port:  # a refusal does not tell where a name leads
            assert str(layout) not in e["message"]
        cid = (await call(c, "open", {"port": "replay://safe/ok.jsonl?mode=instant"}))["connection_id"]
        r = await call(c, "read", {"connection_id": cid, "match": "fine", "timeout_ms": 5000})
        assert r["data"] == "fine"


@pytest.mark.anyio
@pytest.mark.slow
async def test_an_absolute_allowlisted_replay_directory(layout: Path) -> None:
    async with Client(production_server(allowlist=[f"replay://{layout}/outside/*"])) as c:
        cid = (await call(c, "open", {"port": f"replay://{layout}/outside/secret.jsonl?mode=instant"}))[
            "connection_id"
        ]
        assert cid
        e = await error(c, "open", {"port": "replay://safe/ok.jsonl?mode=instant"})
        assert e["code"] == "not_allowed"


def test_a_device_path_is_judged_on_its_real_path(tmp_path: Path) -> None:
    (tmp_path / "allowed").mkdir()
    (tmp_path / "allowed" / "up").symlink_to(tmp_path)
    guard = GuardedOpener(SystemOpener(), parse_allowlist([f"{tmp_path}/allowed/*"]), list)
    with pytest.raises(SerialMcpError) as info:
        guard.judge(f"{tmp_path}/allowed/../elsewhere")
    assert info.value.code == "not_allowed"
    with pytest.raises(SerialMcpError):
        guard.judge(f"{tmp_path}/allowed/up/elsewhere")


# --- time of check / time of use ------------------------------------------------------------------------


@pytest.fixture
def two_devices() -> Iterator[tuple[PtyDevice, PtyDevice]]:
    good, other = PtyDevice(echo).start(), PtyDevice(echo).start()
    yield good, other
    good.close()
    other.close()


@pytest.fixture
def opened_devices(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The st_rdev of every device pyserial actually opened."""
    seen: list[int] = []
    real = serial.serial_for_url

    def recording(url: str, *args: Any, **kwargs: Any) -> Any:
        ser = real(url, *args, **kwargs)
        original_open = ser.open

        def open_and_record() -> None:
            original_open()
            seen.append(os.fstat(ser.fileno()).st_rdev)

        ser.open = open_and_record
        return ser

    monkeypatch.setattr(serial, "serial_for_url", recording)
    return seen


def point(link: Path, target: str) -> None:
    tmp = link.with_name(link.name + ".new")
    tmp.symlink_to(target)
    os.replace(tmp, link)


@pytest.mark.anyio
async def test_a_symlink_flipped_between_check_and_open_never_reaches_the_other_device(
    tmp_path: Path,
    two_devices: tuple[PtyDevice, PtyDevice],
    opened_devices: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    good, other = two_devices
    link = tmp_path / "bench"
    point(link, good.path)

    def judge_then_flip(patterns: Any, facts: PortFacts) -> bool:
        verdict = allowed(patterns, facts)
        point(link, other.path)  # exactly between the check and the open
        return verdict

    monkeypatch.setattr("serial_mcp.serial.policy.allowed", judge_then_flip)
    rounds = 20
    async with Client(production_server(allowlist=[good.path])) as c:
        for _ in range(rounds):
            point(link, good.path)
            cid = (await call(c, "open", {"port": str(link)}))["connection_id"]
            await call(c, "close", {"connection_id": cid})
    assert opened_devices == [os.stat(good.path).st_rdev] * rounds  # the old code opened the other one


def test_a_path_that_is_not_the_judged_file_is_refused_before_it_opens(
    tmp_path: Path, two_devices: tuple[PtyDevice, PtyDevice], opened_devices: list[int]
) -> None:
    """The opener pins the judged path (no link followed) and checks its device and inode."""
    good, other = two_devices
    st = os.stat(good.path)
    with pytest.raises(SerialMcpError) as info:  # the path now holds another file
        SystemOpener().open(JudgedPath(other.path, (st.st_dev, st.st_ino)), SerialSettings())
    assert info.value.code == "not_allowed"
    link = tmp_path / "now-a-link"
    link.symlink_to(good.path)
    with pytest.raises(SerialMcpError) as info:  # a link swapped in where the real path was
        SystemOpener().open(JudgedPath(str(link), (st.st_dev, st.st_ino)), SerialSettings())
    assert info.value.code == "not_allowed"
    assert opened_devices == []
    handle = SystemOpener().open(JudgedPath(good.path, (st.st_dev, st.st_ino)), SerialSettings())
    handle.close()
    assert opened_devices == [st.st_rdev]
