"""``serial-mcp mirror PORT --rfc2217``: the RFC 2217 server on the command line, under the same
policy as the server: the URL is the one line of stdout, ``--read-only`` makes it receive-only,
the allowlist holds, and wrong flag combinations are refused before any port is opened."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import serial

from tests.pty.devices import PtyDevice, echo
from tests.security.test_hostile_doors import SOURCES, Policy, policy

pytestmark = [pytest.mark.pty, pytest.mark.slow]


@pytest.fixture
def device() -> Iterator[PtyDevice]:
    dev = PtyDevice(echo).start()
    yield dev
    dev.close()


def env(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("SERIAL_MCP_")}, **(extra or {})}


def mirror(*args: str, pol: Policy | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "serial_mcp", *(pol.args if pol else ()), *args],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env(pol.env if pol else None),
    )  # fmt: skip


def serve(*args: str, pol: Policy | None = None) -> tuple[subprocess.Popen[bytes], str]:
    proc = mirror(*args, pol=pol)
    assert proc.stdout is not None
    url = proc.stdout.readline().decode().strip()
    assert url.startswith("rfc2217://127.0.0.1:"), (url, proc.communicate(timeout=30))
    return proc, url


def stop(proc: subprocess.Popen[bytes]) -> tuple[int, str]:
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, (out + err).decode(errors="replace")


def test_mirror_rfc2217_serves_the_port(device: PtyDevice) -> None:
    proc, url = serve("mirror", device.path, "--rfc2217")
    try:
        with serial.serial_for_url(url, baudrate=115200, timeout=10) as c:
            c.write(b"hello\xff")
            assert c.read(6) == b"hello\xff"
    finally:
        code, said = stop(proc)
    assert code == 0 and f"serving {device.path} on {url}" in said, said
    assert bytes(device.received) == b"hello\xff"
    host, port = url.removeprefix("rfc2217://").split(":")
    with pytest.raises(ConnectionRefusedError):  # nothing listens once the command has ended
        socket.create_connection((host, int(port)), timeout=5).close()


@pytest.mark.parametrize("source", SOURCES)
def test_read_only_mirror_rfc2217_is_receive_only(device: PtyDevice, source: str, tmp_path: Path) -> None:
    proc, url = serve("mirror", device.path, "--rfc2217", pol=policy("read_only", source, tmp_path))
    try:
        with serial.serial_for_url(url, baudrate=115200, timeout=10) as c:
            c.write(b"dropped")
            c.baudrate = 9600  # acknowledged after the data was handled, not applied
            device.send(b"seen")
            assert c.read(4) == b"seen"
    finally:
        code, said = stop(proc)
    assert code == 0 and "receive-only" in said, said
    assert bytes(device.received) == b""


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--rw", "--rfc2217"], "not allowed with argument"),
        (["--esp-reset"], "--esp-reset goes with --rfc2217"),
    ],
)
def test_wrong_flag_combinations_are_refused(device: PtyDevice, args: list[str], said: str) -> None:
    proc = mirror("mirror", device.path, *args)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and said in err.decode(), err
    assert out == b"" and bytes(device.received) == b""


@pytest.mark.parametrize("source", SOURCES)
def test_the_allowlist_holds_for_mirror_rfc2217(device: PtyDevice, source: str, tmp_path: Path) -> None:
    proc = mirror("mirror", device.path, "--rfc2217", pol=policy("allowlist", source, tmp_path))
    out, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "allowlist" in err.decode(), err
    assert out == b""
