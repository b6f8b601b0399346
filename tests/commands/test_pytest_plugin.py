"""The pytest plugin as a user meets it: a test file of their own, in a fresh directory, run by pytest
(in a subprocess) with the plugin found through its entry point, talking to the PTYs with plain
pyserial as their software would."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

pytest_plugins = ["pytester"]

CAPTURES = Path(__file__).parents[2] / "captures"

USER_TESTS = '''
import os
import threading
from pathlib import Path

import pytest
import serial

from serial_mcp.store.capture_files import read_capture

HERE = Path(__file__).parent


def ptys_held() -> int:
    """PTY masters this process holds open."""
    fds = os.listdir("/proc/self/fd")
    return sum(1 for fd in fds if os.path.exists(f"/proc/self/fd/{fd}") and os.readlink(f"/proc/self/fd/{fd}") == "/dev/ptmx")


BEFORE = ptys_held()


def test_replay_answers_in_respond_mode(serial_replay):
    path = serial_replay("at-modem-session.jsonl", mode="respond")  # found beside this file
    with serial.Serial(path, 115200, timeout=10) as port:
        port.write(b"AT\\r")
        assert port.read_until(b"OK\\r\\n") == b"AT\\r\\r\\nOK\\r\\n"
        port.write(b"ATE0\\r")
        assert port.read_until(b"OK\\r\\n").endswith(b"OK\\r\\n")


def test_replay_plays_a_boot_log(serial_replay):
    sample = HERE / "uboot-mt7622.jsonl"
    expected = read_capture(sample).payload("rx")
    with serial.Serial(serial_replay(sample, mode="instant"), 115200, timeout=10) as port:
        assert port.read(len(expected)) == expected


def test_two_simulated_devices(serial_sim):
    modem, echo = serial_sim("modem"), serial_sim("echo")
    assert modem != echo
    with serial.Serial(modem, 115200, timeout=10) as port:
        assert port.read_until(b"READY\\r\\n") == b"\\r\\nSIM MODEM READY\\r\\n"
        port.write(b"AT+CSQ\\r")
        assert port.read_until(b"OK\\r\\n") == b"\\r\\n+CSQ: 23,99\\r\\n\\r\\nOK\\r\\n"
    with serial.Serial(echo, 115200, timeout=10) as port:
        port.write(b"ping")
        assert port.read(4) == b"ping"


@pytest.mark.anyio
async def test_the_engine(serial_engine):
    conn = await serial_engine.open("sim://modem", record="session.jsonl")
    reply = await conn.transact("AT\\r", match="OK")
    assert reply.read.matched and reply.write.bytes_written == 3
    replayed = await serial_engine.open(f"replay://{HERE / 'at-modem-session.jsonl'}?mode=respond")
    assert (await replayed.transact("AT\\r", match="OK")).read.matched


def test_everything_was_cleaned_up():
    assert not [t.name for t in threading.enumerate() if t.name.startswith(("pty-bridge", "serial-mcp"))]
    assert ptys_held() == BEFORE
'''


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs Linux PTYs and /proc")
def test_a_users_test_file_uses_every_fixture(pytester: pytest.Pytester) -> None:
    tests = pytester.mkdir("tests")
    for name in ("at-modem-session.jsonl", "uboot-mt7622.jsonl"):
        shutil.copy(CAPTURES / name, tests / name)
    (tests / "test_device.py").write_text(USER_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "tests")  # run from the project root
    result.assert_outcomes(passed=5)


def test_a_missing_capture_fails_the_test_with_the_replay_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_it(serial_replay):
            serial_replay("no-such-capture.jsonl")
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no-such-capture.jsonl*"])


def test_serial_engine_in_a_synchronous_test_says_what_to_do(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_it(serial_engine):
            serial_engine.open("sim://modem")
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*SyncEngine*"])
