"""replay:// (serial/replay.py) and the pyserial handler: captures played back as ports.

Timing is checked by order and relative spacing (plus "never early", which load cannot break),
never by an upper wall-clock bound.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import serial

from serial_mcp.core.capture import Capture, CaptureEvent, CaptureHeader, capture_text
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import InvalidArgument, SerialMcpError
from serial_mcp.pyserial_replay import register
from serial_mcp.serial.replay import (
    ReplayMismatch,
    ReplayOpener,
    ReplayPortHandle,
    ReplaySpec,
    parse_replay_url,
)
from serial_mcp.store.capture_files import read_capture

REPO = Path(__file__).resolve().parents[2]
CAPTURES = REPO / "captures"
SAMPLES = sorted(CAPTURES.glob("*.jsonl"))
AT_SAMPLE = CAPTURES / "at-modem-session.jsonl"
JOIN = 10.0  # generous: only a hang fails


def write_capture(path: Path, events: list[CaptureEvent]) -> Path:
    path.write_text(
        capture_text(CaptureHeader(created="2026-11-30T10:00:00.000000Z"), events), encoding="utf-8"
    )
    return path


def rx(t: float, data: bytes) -> CaptureEvent:
    return CaptureEvent(t, "rx", data)


def tx(t: float, data: bytes) -> CaptureEvent:
    return CaptureEvent(t, "tx", data)


def handle_for(events: list[CaptureEvent], **spec: object) -> ReplayPortHandle:
    header = CaptureHeader(created="2026-11-30T10:00:00.000000Z")
    capture = Capture(header, events)
    return ReplayPortHandle("replay://test", capture, ReplaySpec("test", **spec))  # type: ignore[arg-type]


def read_exactly(handle: ReplayPortHandle, n: int) -> bytes:
    """Read ``n`` bytes; a replay that stops delivering fails the test instead of hanging it."""
    out = bytearray()
    while len(out) < n:
        chunk = handle.read_due(JOIN)
        assert chunk, f"no data within {JOIN} s; got {bytes(out)!r} of {n} bytes"
        out += chunk
    return bytes(out)


def exchanges(capture: Capture) -> Iterator[tuple[bytes, bytes]]:
    """(recorded tx, the rx that follows it) pairs; consecutive tx events form one command."""
    command, reply = b"", b""
    for e in capture.events:
        if e.type == "tx" and e.data:
            if reply:
                yield command, reply
                command, reply = b"", b""
            command += e.data
        elif e.type == "rx" and e.data and command:
            reply += e.data
    if command:
        yield command, reply


# --- URLs -------------------------------------------------------------------------------------------


def test_url_defaults_and_options() -> None:
    assert parse_replay_url("replay://boot.jsonl") == ReplaySpec("boot.jsonl", "timed", 1.0, False)
    assert parse_replay_url("REPLAY://dir/x.jsonl?mode=Respond&speed=2.5&loop=true") == ReplaySpec(
        "dir/x.jsonl", "respond", 2.5, True
    )
    assert parse_replay_url("replay:///abs/x.jsonl?loop=0").path == "/abs/x.jsonl"
    assert parse_replay_url("replay://my%20file.jsonl?loop").path == "my file.jsonl"
    assert parse_replay_url("replay://x.jsonl?loop").loop is True
    assert parse_replay_url("replay://x.jsonl?mode=instant&loop=off") == ReplaySpec(
        "x.jsonl", "instant", 1.0, False
    )


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("replay://", "names no capture file"),
        ("replay://?mode=timed", "names no capture file"),
        ("sim://modem", "does not start with replay://"),
        ("replay://x.jsonl?mdoe=timed", "did you mean 'mode'"),
        ("replay://x.jsonl?rate=2", "'rate' is not known"),
        ("replay://x.jsonl?mode=fast", "mode 'fast' is not known"),
        ("replay://x.jsonl?speed=0", "speed '0' must be a number above 0"),
        ("replay://x.jsonl?speed=-2", "must be a number above 0"),
        ("replay://x.jsonl?speed=nan", "must be a number above 0"),
        ("replay://x.jsonl?speed=inf", "must be a number above 0"),
        ("replay://x.jsonl?speed=fast", "must be a number above 0"),
        ("replay://x.jsonl?loop=maybe", "loop 'maybe' must be true or false"),
        ("replay://x.jsonl?speed=1&speed=2", "given more than once"),
    ],
)
def test_bad_urls_say_what_is_wrong(url: str, fragment: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        parse_replay_url(url)
    assert fragment in info.value.message
    assert "replay://FILE.jsonl?mode=" in info.value.message


# --- finding and loading files ------------------------------------------------------------------------


def test_relative_paths_try_the_working_directory_then_the_captures_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "captures").mkdir()
    (tmp_path / "elsewhere").mkdir()
    write_capture(tmp_path / "captures" / "a.jsonl", [rx(0, b"from captures/")])
    write_capture(tmp_path / "elsewhere" / "b.jsonl", [rx(0, b"from elsewhere/")])
    write_capture(tmp_path / "a.jsonl", [rx(0, b"from cwd")])
    settings = SerialSettings()

    assert ReplayOpener().open("replay://a.jsonl?mode=instant", settings).read_chunk() == b"from cwd"
    (tmp_path / "a.jsonl").unlink()
    assert ReplayOpener().open("replay://a.jsonl?mode=instant", settings).read_chunk() == b"from captures/"
    custom = ReplayOpener(Path("elsewhere"))  # a relative captures dir is taken from the cwd
    assert custom.open("replay://b.jsonl?mode=instant", settings).read_chunk() == b"from elsewhere/"
    absolute = f"replay://{tmp_path / 'elsewhere' / 'b.jsonl'}?mode=instant"
    assert ReplayOpener().open(absolute, settings).read_chunk() == b"from elsewhere/"


def test_a_missing_file_lists_where_it_looked_and_what_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "captures").mkdir()
    write_capture(tmp_path / "captures" / "boot.jsonl", [rx(0, b"x")])
    with pytest.raises(SerialMcpError) as info:
        ReplayOpener().open("replay://bot.jsonl", SerialSettings())
    assert info.value.code == "port_not_found"
    assert str(tmp_path / "bot.jsonl") in info.value.message
    assert str(tmp_path / "captures" / "bot.jsonl") in info.value.message
    assert "boot.jsonl" in info.value.message


def test_directories_bad_captures_and_huge_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SerialMcpError) as info:
        ReplayOpener().open(f"replay://{tmp_path}", SerialSettings())
    assert "not a regular file" in info.value.message

    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"format": "serial-mcp-capture", "version": 1, "created": "2026-11-30T10:00:00Z"}\n{"t": 1}\n'
    )
    with pytest.raises(SerialMcpError) as info:
        ReplayOpener().open(f"replay://{bad}", SerialSettings())
    assert info.value.code == "capture_invalid"
    assert info.value.details["line"] == 2 and str(bad) in info.value.message

    big = write_capture(tmp_path / "big.jsonl", [rx(0, b"x" * 1000)])
    with pytest.raises(SerialMcpError) as info:
        ReplayOpener(max_file_bytes=500).open(f"replay://{big}", SerialSettings())
    assert "above the replay limit" in info.value.message


# --- timed ------------------------------------------------------------------------------------------


@pytest.mark.serial  # measures the spacing of arrivals: no other test on the cores
def test_timed_replay_keeps_order_and_relative_spacing() -> None:
    """speed=20: the 1.0 s recorded gap (50 ms) is measured larger than the 0.1 s one (5 ms)."""
    handle = handle_for([rx(0.0, b"A"), rx(1.0, b"B"), rx(1.1, b"C")], speed=20.0)
    started = time.monotonic()
    arrivals: dict[int, float] = {}
    received = b""
    while len(received) < 3:
        chunk = handle.read_due(JOIN)
        now = time.monotonic()
        assert chunk, "the replay stopped delivering"
        for byte in chunk:
            arrivals[byte] = now
        received += chunk
    assert received == b"ABC"
    gap_ab = arrivals[ord("B")] - arrivals[ord("A")]
    gap_bc = arrivals[ord("C")] - arrivals[ord("B")]
    assert gap_ab > gap_bc
    # never early (a lower bound: load can only make it later)
    assert arrivals[ord("C")] - started >= 1.1 / 20 - 0.001
    assert handle.finished.is_set() and handle.passes == 1


def test_timed_replay_holds_bytes_until_they_are_due() -> None:
    handle = handle_for([rx(0.0, b"now"), rx(3600.0, b"in an hour")])
    assert handle.read_chunk() == b"now"
    assert handle.read_due(0) == b""
    assert handle.due_bytes() == 0
    assert handle.status()["pending_bytes"] == len(b"in an hour")
    assert not handle.finished.is_set()


def test_a_slow_reader_gets_due_chunks_together() -> None:
    handle = handle_for([rx(0.0, b"a"), rx(0.0, b"b"), rx(0.0, b"c")])
    assert handle.read_chunk() == b"abc"


# --- instant ----------------------------------------------------------------------------------------


def test_instant_replay_makes_every_rx_byte_available_at_once() -> None:
    events = [
        CaptureEvent(0, "open"),
        rx(1.0, b"one "),
        tx(2.0, b"ignored"),
        rx(3600.0, b"two"),
        CaptureEvent(3601, "close"),
    ]
    handle = handle_for(events, mode="instant")
    assert handle.due_bytes() == 7
    assert handle.read_chunk() == b"one two"
    assert handle.finished.is_set()
    handle.write(b"anything")  # accepted, recorded, not compared
    assert handle.written == b"anything" and handle.mismatch_count == 0
    assert handle.read_due(0) == b""


# --- respond ----------------------------------------------------------------------------------------

AT_EVENTS = [
    CaptureEvent(0.0, "open"),
    rx(0.1, b"\r\nRDY\r\n"),
    tx(1.0, b"AT\r"),
    rx(1.01, b"\r\nOK\r\n"),
    tx(2.0, b"ATI\r"),
    rx(2.01, b"\r\nEC25\r\n"),
    rx(2.02, b"\r\nOK\r\n"),
    tx(3.0, b"AT+CSQ\r"),
    rx(3.01, b"\r\n+CSQ: 23,99\r\n\r\nOK\r\n"),
]


def test_respond_mode_answers_writes_in_the_recorded_order() -> None:
    handle = handle_for(AT_EVENTS, mode="respond", speed=50.0)
    assert handle.read_chunk() == b"\r\nRDY\r\n"  # what precedes the first tx plays by itself
    assert handle.status()["pending_bytes"] == 0  # the reply is held until the host writes
    handle.write(b"AT\r")
    assert read_exactly(handle, 6) == b"\r\nOK\r\n"
    handle.write(b"ATI\r")
    assert read_exactly(handle, 14) == b"\r\nEC25\r\n\r\nOK\r\n"
    handle.write(b"AT+CSQ\r")
    assert read_exactly(handle, 21) == b"\r\n+CSQ: 23,99\r\n\r\nOK\r\n"
    assert handle.mismatches == [] and handle.mismatch_count == 0
    assert handle.finished.is_set()


def test_a_command_written_in_pieces_matches() -> None:
    handle = handle_for(AT_EVENTS, mode="respond", speed=50.0)
    read_exactly(handle, 7)
    handle.write(b"A")
    handle.write(b"T")
    assert handle.status()["pending_bytes"] == 0  # a strict prefix: still waiting for the rest
    handle.write(b"\r")
    assert read_exactly(handle, 6) == b"\r\nOK\r\n"
    assert handle.mismatch_count == 0


def test_a_mismatching_write_is_recorded_and_replay_proceeds() -> None:
    handle = handle_for(AT_EVENTS, mode="respond", speed=50.0)
    seen: list[ReplayMismatch] = []
    handle.on_mismatch = seen.append
    read_exactly(handle, 7)
    handle.write(b"AT\r")
    read_exactly(handle, 6)
    handle.write(b"AT+CSQ\r")  # the recording has ATI here
    assert read_exactly(handle, 14) == b"\r\nEC25\r\n\r\nOK\r\n"  # the recorded reply plays anyway
    assert handle.mismatches == [ReplayMismatch(1, b"ATI\r", b"AT+CSQ\r", 2.0)]
    assert seen == handle.mismatches and handle.mismatch_count == 1
    assert "ATI" in handle.mismatches[0].describe("replay://x")
    handle.write(b"AT+CSQ\r")  # back in step
    assert read_exactly(handle, 21) == b"\r\n+CSQ: 23,99\r\n\r\nOK\r\n"
    assert handle.mismatch_count == 1
    handle.write(b"AT+COPS?\r")  # past the end of the recording: reported, nothing plays
    assert handle.mismatches[-1] == ReplayMismatch(3, b"", b"AT+COPS?\r", None)
    assert handle.mismatch_count == 2 and handle.read_due(0) == b""


def test_consecutive_tx_events_form_one_command() -> None:
    events = [tx(0.0, b"AT+CMGS=1\r"), tx(0.1, b"hello\x1a"), rx(0.2, b"\r\nOK\r\n")]
    handle = handle_for(events, mode="respond", speed=100.0)
    handle.write(b"AT+CMGS=1\rhello\x1a")
    assert read_exactly(handle, 6) == b"\r\nOK\r\n"
    assert handle.mismatch_count == 0


def test_a_blocked_reader_is_woken_by_the_write_that_releases_the_reply() -> None:
    handle = handle_for(AT_EVENTS, mode="respond", speed=1000.0)
    read_exactly(handle, 7)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(read_exactly(handle, 6)), daemon=True)
    reader.start()
    handle.write(b"AT\r")
    reader.join(JOIN)
    assert not reader.is_alive() and got == [b"\r\nOK\r\n"]


def test_respond_mode_with_the_at_sample_and_transact_style_use() -> None:
    capture = read_capture(AT_SAMPLE)
    handle = ReplayOpener(CAPTURES).open(f"replay://{AT_SAMPLE}?mode=respond&speed=100", SerialSettings())
    pairs = list(exchanges(capture))
    assert len(pairs) >= 10
    for command, reply in pairs:
        handle.write(command)
        assert read_exactly(handle, len(reply)) == reply
    assert handle.mismatch_count == 0 and handle.finished.is_set()


# --- loop, end of file ----------------------------------------------------------------------------------


def test_end_of_file_goes_quiet_without_loop() -> None:
    handle = handle_for([rx(0.0, b"once")], mode="instant")
    assert handle.read_chunk() == b"once"
    assert handle.read_due(0.01) == b""


def test_loop_restarts_instant_and_timed_replays() -> None:
    instant = handle_for([rx(0.0, b"ab"), rx(5.0, b"c")], mode="instant", loop=True)
    assert [instant.read_due(JOIN) for _ in range(3)] == [b"abc"] * 3
    assert instant.passes >= 2

    timed = handle_for([rx(0.0, b"x"), rx(0.5, b"y"), CaptureEvent(1.0, "close")], speed=100.0, loop=True)
    assert read_exactly(timed, 8) == b"xyxyxyxy"
    assert timed.finished.is_set() and timed.passes >= 3


def test_loop_in_respond_mode_starts_the_script_again() -> None:
    handle = handle_for(AT_EVENTS, mode="respond", speed=100.0, loop=True)
    for _ in range(2):
        assert read_exactly(handle, 7) == b"\r\nRDY\r\n"
        for command, reply in [(b"AT\r", 6), (b"ATI\r", 14), (b"AT+CSQ\r", 21)]:
            handle.write(command)
            read_exactly(handle, reply)
    assert handle.mismatch_count == 0 and handle.passes == 2


def test_loop_with_no_rx_stays_quiet() -> None:
    handle = handle_for([CaptureEvent(0, "open"), tx(1, b"x")], mode="instant", loop=True)
    assert handle.read_due(0.01) == b""
    assert handle.finished.is_set()


# --- interrupt, close, line calls -------------------------------------------------------------------------


def test_interrupt_wakes_a_blocked_read_chunk() -> None:
    handle = handle_for([rx(3600.0, b"late")])
    result: list[bytes] = []
    started = threading.Event()

    def reader() -> None:
        started.set()
        result.append(handle.read_chunk())

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    started.wait(JOIN)
    time.sleep(0.02)  # let it reach the wait; correctness does not depend on it
    handle.interrupt()
    thread.join(JOIN)
    assert not thread.is_alive() and result == [b""]


def test_interrupt_before_a_read_makes_that_read_return_empty_once() -> None:
    handle = handle_for([rx(0.0, b"data")], mode="instant")
    handle.interrupt()
    assert handle.read_chunk() == b""
    assert handle.read_chunk() == b"data"


def test_close_wakes_a_reader_and_later_calls_fail() -> None:
    handle = handle_for([rx(3600.0, b"late")])
    result: list[bytes] = []
    thread = threading.Thread(target=lambda: result.append(handle.read_chunk()), daemon=True)
    thread.start()
    time.sleep(0.02)
    handle.close()
    thread.join(JOIN)
    assert not thread.is_alive() and result == [b""]
    with pytest.raises(OSError):
        handle.read_chunk()
    with pytest.raises(OSError):
        handle.write(b"x")


def test_settings_and_line_calls_are_accepted_and_recorded() -> None:
    handle = handle_for([rx(0.0, b"x")], mode="instant")
    settings = SerialSettings(baud_rate=9600)
    handle.apply_settings(settings)
    handle.set_dtr(False)
    handle.set_rts(True)
    handle.set_break(True)
    handle.set_break(False)
    handle.reset_output()
    assert handle.calls == [
        ("settings", settings),
        ("dtr", False),
        ("rts", True),
        ("break", True),
        ("break", False),
        ("reset_output", None),
    ]
    assert handle.settings == settings
    assert handle.modem_lines() == {"cts": None, "dsr": None, "ri": None, "cd": None}


def test_reset_input_drops_due_bytes_only() -> None:
    handle = handle_for([rx(0.0, b"old"), rx(3600.0, b"new")])
    handle.reset_input()
    assert handle.due_bytes() == 0
    assert handle.status()["pending_bytes"] == 3


# --- the samples ------------------------------------------------------------------------------------


def test_the_samples_exist_and_are_small() -> None:
    names = {p.name for p in SAMPLES}
    assert {
        "gps-quectel-l76k.jsonl",
        "esp32-boot.jsonl",
        "uboot-mt7622.jsonl",
        "modbus-ascii-delta.jsonl",
        "at-modem-session.jsonl",
    } <= names
    readme = (CAPTURES / "README.md").read_text(encoding="utf-8")
    for path in SAMPLES:
        assert path.stat().st_size < 150_000, path.name
        assert f"`{path.name}`" in readme, f"{path.name} has no source/licence row in captures/README.md"


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_every_sample_replays_instantly_to_exactly_its_rx_bytes(path: Path) -> None:
    capture = read_capture(path)
    assert capture.skipped_unknown == 0 and not capture.torn_tail
    expected = capture.payload("rx")
    assert expected
    handle = ReplayOpener(CAPTURES).open(f"replay://{path.name}?mode=instant", SerialSettings())
    assert read_exactly(handle, len(expected)) == expected
    assert handle.finished.is_set() and handle.read_due(0) == b""


@pytest.mark.parametrize("path", [p for p in SAMPLES if read_capture(p).payload("tx")], ids=lambda p: p.name)
def test_samples_with_tx_answer_in_respond_mode(path: Path) -> None:
    capture = read_capture(path)
    handle = ReplayOpener(CAPTURES).open(f"replay://{path.name}?mode=respond&speed=1000", SerialSettings())
    for command, reply in exchanges(capture):
        handle.write(command)
        assert read_exactly(handle, len(reply)) == reply
    assert handle.mismatch_count == 0


def test_the_samples_are_reproducible_from_shared_data(monkeypatch: pytest.MonkeyPatch) -> None:
    data = REPO / "tests" / "data"  # copies of the project's data set (tests/data/SOURCES.md)
    spec = importlib.util.spec_from_file_location(
        "make_sample_captures", REPO / "tools" / "make_sample_captures.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    built = module.build(data)
    assert set(built) == {p.name for p in SAMPLES}
    for name, text in built.items():
        assert (CAPTURES / name).read_text(encoding="utf-8") == text, f"{name} is stale: run the generator"


# --- pyserial ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_pyserial_opens_replay_urls_after_register(tmp_path: Path) -> None:
    register()
    register()  # idempotent
    path = write_capture(tmp_path / "s.jsonl", [rx(0.0, b"hello\n"), rx(0.5, b"world\n")])
    port = serial.serial_for_url(f"replay://{path}?mode=instant", timeout=1)
    try:
        assert port.readline() == b"hello\n"
        assert port.in_waiting == 6
        assert port.read(100) == b"world\n"
        port.timeout = 0
        assert port.read(10) == b""
        port.baudrate = 9600
        port.dtr = False
        assert ("settings", SerialSettings(baud_rate=9600)) in port.replay.calls
        assert ("dtr", False) in port.replay.calls
    finally:
        port.close()


def test_pyserial_reads_the_recorded_bytes_of_a_sample_and_answers_in_respond_mode() -> None:
    register(CAPTURES)
    capture = read_capture(AT_SAMPLE)
    port = serial.serial_for_url(f"replay://{AT_SAMPLE.name}?mode=respond&speed=100", timeout=JOIN)
    try:
        for command, reply in exchanges(capture):
            port.write(command)
            assert port.read(len(reply)) == reply
        assert port.replay.mismatch_count == 0
    finally:
        port.close()

    boot = read_capture(CAPTURES / "esp32-boot.jsonl").payload("rx")
    port = serial.serial_for_url("replay://esp32-boot.jsonl?mode=instant", timeout=JOIN)
    try:
        assert port.read(len(boot)) == boot
    finally:
        port.close()


def test_pyserial_cancel_read_and_missing_files() -> None:
    register()
    with pytest.raises(serial.SerialException, match="not found"):
        serial.serial_for_url("replay://no-such-capture.jsonl")
    port = serial.serial_for_url(f"replay://{AT_SAMPLE}?mode=respond")  # timeout None: blocks
    try:
        result: list[bytes] = []
        thread = threading.Thread(target=lambda: result.append(port.read(1)), daemon=True)
        thread.start()
        time.sleep(0.02)
        port.cancel_read()
        thread.join(JOIN)
        assert not thread.is_alive() and result == [b""]
    finally:
        port.close()
