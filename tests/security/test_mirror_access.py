"""The mirrors serve their owner only (issue 36.1, 36.2): another local user's client is refused by
the RFC 2217 mirror before anything reaches the device or the port counts as lent; another
session, or the owner itself, cannot reach an owned device through a mirror's URL or PTY, however
the URL is spelled; non-owners see neither the URL nor the PTY path."""

from __future__ import annotations

import argparse
import encodings.idna  # noqa: F401  # loaded before the fork: the child, as nobody, cannot read the stdlib
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
import serial

from serial_mcp import Engine, config
from serial_mcp.engine import mirroring, port_ops
from serial_mcp.engine.access import Caller
from serial_mcp.errors import SerialMcpError
from serial_mcp.serial import peer_process
from tests.pty.devices import PtyDevice, inner

pytestmark = [pytest.mark.anyio, pytest.mark.pty]
NOBODY_UID = 65534


def _as_nobody(port: int, out: int) -> None:
    """In a forked child: become ``nobody``, connect, send plain data and a baud change, and write
    what came back to ``out``."""
    os.setgroups([])
    os.setgid(NOBODY_UID)
    os.setuid(NOBODY_UID)
    got = b""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        try:
            s.sendall(b"FROM-NOBODY\r\n" + bytes([255, 250, 44, 1, 0, 0, 0xE1, 0, 255, 240]))
            while chunk := s.recv(4096):
                got += chunk
        except OSError:
            pass
    os.write(out, got)



def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def run_as_nobody(port: int) -> str:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: nothing but a socket, then out
        code = 1
        try:
            os.close(r)
            _as_nobody(port, w)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as pipe:
        got = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return got.decode("latin-1")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a client as another user")
async def test_another_users_client_is_refused_before_anything_reaches_the_device(
    echo_dev: PtyDevice,
) -> None:
    async with Engine() as eng:
        conn = await eng.open(echo_dev.path, mirror="rfc2217")
        url = conn.opened.mirror_url or ""
        got = await anyio.to_thread.run_sync(run_as_nobody, port_of(url))
        assert "refused" in got and f"uid {NOBODY_UID}" in got  # told why, in the telnet stream
        assert bytes(echo_dev.received) == b""  # nothing reached the device
        c = inner(eng, conn.id)
        assert c.lent_to is None and c.settings.baud_rate == 115200
        status = await conn.get_status()
        assert status.rfc2217 is not None and status.rfc2217["refused_users"] == 1
        assert status.rfc2217["client"] is None and status.settings["baud_rate"] == 115200

        def owner_talks() -> bytes:  # the owner (this process's uid) is served, never locked out
            with serial.serial_for_url(url, baudrate=115200, timeout=10) as port:
                port.write(b"mine")
                return bytes(port.read(4))

        assert await anyio.to_thread.run_sync(owner_talks) == b"mine"
        assert bytes(echo_dev.received) == b"mine"


async def test_a_peer_that_cannot_be_identified_is_refused_unless_any_user(
    echo_dev: PtyDevice, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "net").mkdir()  # a /proc with no socket tables: no uid to be found
    monkeypatch.setattr(peer_process, "PROC", tmp_path)
    async with Engine() as eng:
        conn = await eng.open(echo_dev.path, mirror="rfc2217")
        url = conn.opened.mirror_url or ""

        def talk() -> bytes:
            with serial.serial_for_url(url, baudrate=115200, timeout=3) as port:
                port.write(b"who")
                return bytes(port.read(3))

        with pytest.raises((serial.SerialException, OSError)):  # pyserial's client: refused at its open
            await anyio.to_thread.run_sync(talk)
        assert bytes(echo_dev.received) == b""
        status = await conn.get_status()
        assert status.rfc2217 is not None and status.rfc2217["refused_users"] == 1
        inner(eng, conn.id).rfc2217.any_user = True  # --mirror-any-user
        assert await anyio.to_thread.run_sync(talk) == b"who"


def test_mirror_any_user_is_a_flag_an_environment_variable_and_a_config_key(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    config.add_options(parser)
    try:
        config.port_policy(config.resolve(parser.parse_args([]), environ={}))
        assert not peer_process.any_user() and not peer_process.may_attach(None)
        config.port_policy(config.resolve(parser.parse_args(["--mirror-any-user"]), environ={}))
        assert peer_process.any_user() and peer_process.may_attach(None)
        config.port_policy(config.resolve(parser.parse_args([]), environ={}))
        assert not peer_process.any_user()
        config.port_policy(config.resolve(parser.parse_args([]), environ={"SERIAL_MCP_MIRROR_ANY_USER": "1"}))
        assert peer_process.any_user()
        toml = tmp_path / "c.toml"
        toml.write_text("mirror_any_user = false\n")
        config.port_policy(config.resolve(parser.parse_args(["--config", str(toml)]), environ={}))
        assert not peer_process.any_user()
    finally:
        peer_process.allow_any_user(False)
    me, root, nobody = (peer_process.PeerSocket(uid, "4242") for uid in (os.geteuid(), 0, NOBODY_UID))
    assert peer_process.may_attach(me) and peer_process.may_attach(root)
    assert not peer_process.may_attach(nobody) and not peer_process.may_attach(nobody, any_user=True)


async def test_no_spelling_of_the_mirrors_url_opens_a_second_door(echo_dev: PtyDevice) -> None:
    async with Engine() as eng:
        conn = await eng.open(echo_dev.path, mirror="rfc2217")
        n = port_of(conn.opened.mirror_url or "")
        spellings = [
            f"socket://127.0.0.1:{n}",
            f"rfc2217://127.1:{n}",
            f"rfc2217://0.0.0.0:{n}",
            f"socket://2130706433:{n}",  # 127.0.0.1 as one decimal number
            f"socket://localhost:{n}",
            f"rfc2217://[::1]:{n}",
            f"socket://[::ffff:127.0.0.1]:{n}",
            f"rfc2217://127.0.0.1:{n}?timeout=3",
        ]
        for url in spellings:
            with pytest.raises(SerialMcpError) as refused:
                await eng.open(url)
            assert refused.value.code == "not_allowed", url
            assert conn.id in refused.value.message and "RFC 2217 mirror" in refused.value.message, url
            assert "you own" in refused.value.message, url
        assert [c.connection_id for c in eng.connections().connections] == [conn.id]
        assert bytes(echo_dev.received) == b""


async def test_the_pty_mirror_is_no_second_door(echo_dev: PtyDevice, tmp_path: Path) -> None:
    async with Engine() as eng:
        conn = await eng.open(echo_dev.path, mirror="rw")
        pty = conn.opened.mirror or ""
        link = tmp_path / "looks-harmless"
        link.symlink_to(pty)
        for name in (pty, str(link)):
            with pytest.raises(SerialMcpError) as refused:
                await eng.open(name)
            assert refused.value.code == "not_allowed" and "PTY mirror" in refused.value.message
            assert conn.id in refused.value.message
        assert [c.connection_id for c in eng.connections().connections] == [conn.id]
        assert bytes(echo_dev.received) == b""


async def test_another_session_is_told_the_mirrors_owner_and_sees_no_url(echo_dev: PtyDevice) -> None:
    async with Engine() as eng:
        conn = await eng.open(echo_dev.path, mirror="rfc2217")
        url = conn.opened.mirror_url or ""
        svc = eng.services
        other = Caller("session-b")
        seen = port_ops.get_status(svc, other, conn.id)
        assert url not in seen.model_dump_json()  # neither in the fields nor in the text
        assert url not in seen.summary()
        assert seen.rfc2217 is not None and "url" not in seen.rfc2217
        assert port_ops.get_status(svc, Caller.local(), conn.id).rfc2217["url"] == url  # type: ignore[index]
        with pytest.raises(SerialMcpError) as refused:
            await mirroring.refuse_own_mirror(svc.manager, url.replace("rfc2217", "socket"), other.key)
        assert "another session owns" in refused.value.message


@pytest.mark.slow  # starts serial-mcp itself
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a client as another user")
def test_the_cli_mirror_follows_the_same_rule(echo_dev: PtyDevice) -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SERIAL_MCP_")}
    environ["SERIAL_MCP_MIRROR_ANY_USER"] = "1"  # lets in a peer it cannot identify, never another user
    proc = subprocess.Popen(
        [sys.executable, "-m", "serial_mcp", "mirror", echo_dev.path, "--rfc2217"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environ,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().decode().strip()
        assert url.startswith("rfc2217://127.0.0.1:"), proc.communicate(timeout=30)
        got = run_as_nobody(port_of(url))
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert "refused" in got and f"uid {NOBODY_UID}" in got
    assert bytes(echo_dev.received) == b""
    assert f"refused: uid {NOBODY_UID}" in err.decode(errors="replace")  # logged on stderr


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_a_local_peers_uid_is_found_over_ipv4_and_ipv6(host: str) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        server = socket.create_server((host, 0), family=family)
    except OSError:
        pytest.skip(f"no {host} here")
    with server, socket.create_connection(server.getsockname()[:2]) as client:
        accepted, _ = server.accept()
        with accepted:
            assert peer_process.peer_uid(accepted) == os.geteuid()  # tcp, or tcp6 for ::1
            assert peer_process.peer_uid(client) == os.geteuid()  # the other end too


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a client as another user")
def test_a_client_that_closed_before_the_accept_cannot_pass_as_root() -> None:
    """Its socket, closed, is a kernel stub that /proc shows as uid 0 with no inode: never served."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        pid = os.fork()
        if pid == 0:  # nobody connects, sends, closes, before anything is accepted
            code = 1
            try:
                os.setgroups([])
                os.setgid(NOBODY_UID)
                os.setuid(NOBODY_UID)
                with socket.create_connection(server.getsockname()[:2]) as early:
                    early.sendall(b"reset the board")
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        accepted, _ = server.accept()
        with accepted:
            peer = peer_process.peer_socket(accepted)
            assert peer is not None and peer.inode == "0"
            assert not peer_process.may_attach(peer) and not peer_process.may_attach(peer, any_user=True)


async def test_the_pty_mirror_is_its_owners_alone(echo_dev: PtyDevice) -> None:
    """Not even group tty (write(1), wall) may type into a read-write PTY mirror (devpts often gives
    it 0620)."""
    async with Engine() as eng:
        conn = await eng.open(echo_dev.path, mirror="rw")
        st = os.stat(conn.opened.mirror or "")
        assert st.st_uid == os.geteuid() and st.st_mode & 0o077 == 0
