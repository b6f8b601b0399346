"""The bench engineer's commands as a person runs them: record (Ctrl-C), replay --pty read by plain
pyserial, decode; and a recording that survives SIGKILL of the server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import serial

from serial_mcp.store.capture_files import read_capture
from tests.pty.devices import PtyDevice, interrupt_once_file_holds
from tests.raw_rpc import INITIALIZE_PARAMS, INITIALIZED

pytestmark = pytest.mark.slow

CAPTURES = Path(__file__).parents[2] / "captures"


def spawn(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "serial_mcp", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )


def wait_for_line(stream: object, needle: bytes) -> bytes:
    """Read lines from a child's pipe until one contains ``needle`` (bounded by the pipe closing)."""
    while True:
        line = stream.readline()  # type: ignore[attr-defined]
        assert line, f"process ended before printing {needle!r}"
        if needle in line:
            return bytes(line)


def test_record_until_ctrl_c(tmp_path: Path) -> None:
    dev = PtyDevice().start()
    out = tmp_path / "bench.jsonl"
    proc = spawn("record", dev.path, "-o", str(out), "--note", "unit test")
    try:
        wait_for_line(proc.stderr, b"recording")
        dev.send(b"U-Boot 2024.01\r\nHit any key to stop autoboot\r\n")
        interrupt_once_file_holds(proc, out, b"autoboot", "the recorder never wrote the bytes to its file")
    finally:
        if proc.poll() is None:
            proc.kill()
        dev.close()
    cap = read_capture(out)
    assert cap.header.note == "unit test" and cap.header.port == dev.path
    assert cap.payload("rx") == b"U-Boot 2024.01\r\nHit any key to stop autoboot\r\n"
    assert proc.stderr is not None and b"recorded" in proc.stderr.read()


def test_record_refuses_to_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "exists.jsonl"
    out.write_text("precious")
    proc = spawn("record", "sim://echo", "-o", str(out))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1 and len(err.strip().splitlines()) == 1 and b"never overwritten" in err
    assert out.read_text() == "precious"


def test_replay_pty_is_readable_by_plain_pyserial() -> None:
    sample = CAPTURES / "uboot-mt7622.jsonl"
    proc = spawn("replay", str(sample), "--mode", "instant", "--pty")
    try:
        assert proc.stdout is not None
        path = proc.stdout.readline().decode().strip()
        assert path.startswith("/dev/")
        expected = read_capture(sample).payload("rx")
        with serial.Serial(path, 115200, timeout=10) as port:
            got = port.read(len(expected))
        assert got == expected
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0


def test_replay_respond_answers_a_plain_pyserial_host() -> None:
    proc = spawn("replay", str(CAPTURES / "at-modem-session.jsonl"), "--mode", "respond", "--pty")
    try:
        assert proc.stdout is not None
        path = proc.stdout.readline().decode().strip()
        with serial.Serial(path, 115200, timeout=10) as port:
            port.write(b"AT\r")
            assert port.read_until(b"OK\r\n") == b"AT\r\r\nOK\r\n"
            port.write(b"ATE0\r")
            assert port.read_until(b"OK\r\n").endswith(b"OK\r\n")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


def test_decode_a_capture_offline() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "serial_mcp",
            "decode",
            str(CAPTURES / "gps-gpsdf-bad-checksums.jsonl"),
            "--protocol",
            "nmea0183",
            "--format",
            "jsonl",
        ],
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    frames = [json.loads(line) for line in proc.stdout.splitlines()]
    assert frames and all(f["dir"] == "rx" for f in frames)
    assert all(f["parsed"]["kind"] in ("sentence", "other") for f in frames)
    times = [f["t"] for f in frames]
    assert times == sorted(times)
    assert b"4 dropped" in proc.stderr  # the four sentences with wrong checksums


def test_decode_text_of_a_raw_file(tmp_path: Path) -> None:
    raw = tmp_path / "dump.bin"
    raw.write_bytes(b"one\r\ntwo\rthree\n")
    proc = subprocess.run(
        [sys.executable, "-m", "serial_mcp", "decode", str(raw)], capture_output=True, timeout=60
    )
    assert proc.returncode == 0
    assert [line.split(maxsplit=3)[3] for line in proc.stdout.decode().splitlines()] == [
        '"one"',
        '"two"',
        '"three"',
    ]


def test_recording_survives_sigkill_of_the_server(tmp_path: Path) -> None:
    """A server recording through the MCP tool is killed -9: the file is a valid, replayable capture."""
    dev = PtyDevice().start()
    env = {**os.environ, "SERIAL_MCP_CAPTURE_DIR": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "serial_mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdin and proc.stdout

    def rpc(i: int, method: str, params: dict[str, object] | None = None) -> dict[str, Any]:
        msg: dict[str, object] = {"jsonrpc": "2.0", "id": i, "method": method}
        if params is not None:
            msg["params"] = params
        proc.stdin.write(json.dumps(msg).encode() + b"\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        while True:
            reply = json.loads(proc.stdout.readline())  # type: ignore[union-attr]
            if reply.get("id") == i:
                assert isinstance(reply, dict), reply
                return reply

    try:
        rpc(1, "initialize", INITIALIZE_PARAMS)
        proc.stdin.write((json.dumps(INITIALIZED) + "\n").encode())

        def tool(i: int, name: str, arguments: dict[str, object]) -> dict[str, Any]:
            return rpc(i, "tools/call", {"name": name, "arguments": arguments})

        assert not tool(2, "open", {"port": dev.path, "record": "crash.jsonl"})["result"]["isError"]
        dev.send(b"line before the crash\r\n")
        r = tool(3, "read", {"connection_id": "c1", "match": "crash\r\n", "timeout_ms": 10_000})
        assert "match_index" in r["result"]["structuredContent"]  # lean: a match index says it matched
        tool(4, "write", {"connection_id": "c1", "data": "ping\r"})
        st = tool(5, "record", {"connection_id": "c1", "action": "status"})
        assert st["result"]["structuredContent"]["recording"]
    finally:
        proc.kill()  # SIGKILL: no cleanup at all
        proc.wait(timeout=30)
        dev.close()
    cap = read_capture(tmp_path / "crash.jsonl")
    assert cap.payload("rx") == b"line before the crash\r\n"
    assert cap.payload("tx") == b"ping\r"


def test_mirror_command_shows_a_device_to_plain_pyserial() -> None:
    dev = PtyDevice().start()
    proc = spawn("mirror", dev.path)
    try:
        assert proc.stdout is not None
        path = proc.stdout.readline().decode().strip()
        with serial.Serial(path, 115200, timeout=10) as person:
            dev.send(b"login: ")
            assert person.read(7) == b"login: "
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
        dev.close()
