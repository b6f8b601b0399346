"""PtyBridge (serial/pty_bridge.py): a device handle served on a PTY for a program to open — what
``replay --pty`` and the pytest fixtures stand on. The host is plain pyserial, as a user's software."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import serial

from serial_mcp.api import replay_url, serve_pty
from serial_mcp.store.capture_files import read_capture

CAPTURES = Path(__file__).parents[2] / "captures"


def bridge_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("pty-bridge")]


def test_the_host_can_close_and_open_again() -> None:
    with serve_pty("sim://modem") as bridge:
        with serial.Serial(bridge.path, 115200, timeout=10) as port:
            assert port.read_until(b"READY\r\n").endswith(b"READY\r\n")
            port.write(b"AT\r")
            assert port.read_until(b"OK\r\n") == b"\r\nOK\r\n"
        with serial.Serial(bridge.path, 115200, timeout=10) as port:  # a second run of the program
            port.write(b"AT+CSQ\r")
            assert port.read_until(b"OK\r\n") == b"\r\n+CSQ: 23,99\r\n\r\nOK\r\n"
    assert not bridge_threads()


def test_close_without_a_host_ends_everything() -> None:
    bridge = serve_pty(replay_url(CAPTURES / "uboot-mt7622.jsonl", "instant"))
    assert not bridge.host_opened.is_set()
    bridge.close()
    assert not bridge_threads() and not bridge.host_opened.is_set()


def test_a_host_that_never_reads_does_not_hold_up_close() -> None:
    """The replay is larger than the PTY takes unread: the copying thread waits for room, and close
    still ends it (the wake pipe ends its select)."""
    sample = CAPTURES / "uboot-mt7622.jsonl"
    bridge = serve_pty(replay_url(sample, "instant", loop=True))
    fd = os.open(bridge.path, os.O_RDWR | os.O_NOCTTY)
    try:
        assert bridge.host_opened.wait(30)
        bridge.close()
        assert not bridge_threads()
    finally:
        os.close(fd)


def test_a_replay_reports_when_it_has_played_through() -> None:
    sample = CAPTURES / "uboot-mt7622.jsonl"
    expected = read_capture(sample).payload("rx")
    done = threading.Event()
    with serve_pty(replay_url(sample, "instant"), on_finished=lambda path: done.set()) as bridge:
        with serial.Serial(bridge.path, 115200, timeout=10) as port:
            assert port.read(len(expected)) == expected
        assert done.wait(30) and bridge.finished.is_set()
