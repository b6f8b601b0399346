"""The ``esp_log`` parser and its ``print_filter``, with esp-idf-monitor's own ``LineMatcher`` as the oracle.

Inputs: esp-idf-monitor's host-test logs (``tests/data/esp_idf_monitor``, with the filters its
``test_print_filter`` uses) and the real ESP32 boot log in ``tests/data/bootlogs/esp32``; see
``tests/data/SOURCES.md``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from serial_mcp.core.decode import DecodedFrame, StreamDecoder
from serial_mcp.core.parsers import PrintFilter, build_parser
from serial_mcp.errors import InvalidArgument

line_matcher = pytest.importorskip("esp_idf_monitor.base.line_matcher")
LineMatcher: Any = line_matcher.LineMatcher

DATA = Path(__file__).resolve().parents[1] / "data"
MONITOR = DATA / "esp_idf_monitor"
INPUTS = {
    "in1.txt": MONITOR / "in1.txt",
    "in2.txt": DATA / "bootlogs" / "esp32" / "esp32-mdf-boot.txt",  # byte-identical to the monitor's in2.txt
    "color.txt": MONITOR / "color.txt",
}
# esp-idf-monitor's test_print_filter cases: (input, filter, expected output file)
HOST_CASES = [
    ("in1.txt", "", "in1f1.txt"),
    ("in1.txt", "*:V", "in1f1.txt"),
    ("in1.txt", "hello_world", "in1f2.txt"),
    ("in1.txt", "*:N", "in1f3.txt"),
    ("in2.txt", "boot mdf_device_handle:I mesh:E vfs:I", "in2f1.txt"),
    ("in2.txt", "vfs", "in2f2.txt"),
]
MORE_FILTERS = [
    "*:W",
    "*:E",
    "*:I wifi:W",
    "*:N boot:I",
    "boot:D *:e",
    "mesh:V mesh:N",
    "main_task:I foo",
    "mdf_device_handle:W *:I",
    "spi_flash:* verbose:",
    "hello_world:D",
]


def monitor_text(line: bytes) -> str:
    """How esp-idf-monitor's serial handler decodes a line before LineMatcher sees it."""
    try:
        return line.decode()
    except UnicodeDecodeError:
        return line.strip().decode(errors="ignore")


def monitor_lines(name: str) -> list[bytes]:
    return INPUTS[name].read_bytes().splitlines(keepends=True)


def decoded(name: str, print_filter: str) -> tuple[list[DecodedFrame], StreamDecoder]:
    decoder = StreamDecoder(
        {"type": "line", "ending": "auto"}, {"type": "esp_log", "print_filter": print_filter}
    )
    data = INPUTS[name].read_bytes()
    events = decoder.feed(data) + decoder.flush()
    frames = [e for e in events if isinstance(e, DecodedFrame)]
    return frames, decoder


CASES = [(i, f) for i, f, _ in HOST_CASES] + [(i, f) for i in INPUTS for f in MORE_FILTERS]


@pytest.mark.parametrize(("name", "print_filter"), CASES)
def test_each_line_passes_as_it_passes_line_matcher(name: str, print_filter: str) -> None:
    oracle = LineMatcher(print_filter)
    ours = PrintFilter(print_filter)
    lines = monitor_lines(name)
    assert [ours.shows(line) for line in lines] == [oracle.match(monitor_text(line)) for line in lines]
    # and without the line ending, as the line framing hands frames to the parser
    assert [ours.shows(line.rstrip(b"\r\n")) for line in lines] == [
        oracle.match(monitor_text(line)) for line in lines
    ]


@pytest.mark.parametrize(("name", "print_filter"), CASES)
def test_a_filtered_read_keeps_the_lines_line_matcher_keeps(name: str, print_filter: str) -> None:
    oracle = LineMatcher(print_filter)
    kept = [line for line in monitor_lines(name) if oracle.match(monitor_text(line))]
    frames, decoder = decoded(name, print_filter)
    assert [f.data for f in frames if f.data] == [
        line.rstrip(b"\r\n") for line in kept if line.strip(b"\r\n")
    ]
    total = len(decoded(name, "")[0])
    assert decoder.frames_filtered == total - len(frames)
    assert decoder.frames_dropped == 0


@pytest.mark.parametrize(("name", "print_filter", "expected"), HOST_CASES)
def test_the_host_tests_expected_output(name: str, print_filter: str, expected: str) -> None:
    # esp-idf-monitor's own expected output; it colours E/W/I lines that came uncoloured and strips
    # the console status query (ESC [5n), so escapes are compared without
    def plain(line: bytes) -> bytes:
        return re.sub(rb"\x1b\[[0-9;]*[mn]", b"", line)

    want = [plain(w) for w in (MONITOR / expected).read_bytes().splitlines() if w.strip()]
    frames, _ = decoded(name, print_filter)
    assert [plain(f.data) for f in frames if f.data.strip()] == want


TAGS = ["boot", "vfs", "mesh", "wifi", "hello_world", "mdf_device_handle", "main_task", "*", "a b", "x"]
LEVEL_WORDS = ["", "N", "E", "W", "I", "D", "V", "*", "e", "w", "i", "d", "v", "n", "Q", "II", "0"]
item = st.one_of(
    st.sampled_from(TAGS),
    st.builds(lambda t, lv: f"{t}:{lv}", st.sampled_from([*TAGS, ""]), st.sampled_from(LEVEL_WORDS)),
    st.text(alphabet="ab:*EWI ", max_size=6),
)
filters = st.lists(item, max_size=5).map(" ".join)
ESC = ["", "\x1b[0;32m", "\x1b[0;31m", "\x1b[1;33m", "\x1b[0m", "\x1b[5n", "\x1b[2K"]
log_line = st.builds(
    lambda esc, lv, ts, tag, msg, end: f"{esc}{lv} {ts}{tag}: {msg}{end}".encode(),
    st.sampled_from(ESC),
    st.sampled_from(list("EWIDVNX")),
    st.sampled_from(["", "(0) ", "(123456) ", "(00:00:00.100) ", "(20-02-02 00:00:00.100) ", "() "]),
    st.sampled_from([*TAGS[:-3], "tag with space", "t(1)"]),
    st.text(max_size=12),
    st.sampled_from(["", "\n", "\r\n", "\x1b[0m\r\n"]),
)
any_line = st.one_of(log_line, st.binary(max_size=24), st.sampled_from(monitor_lines("in2.txt")))


@settings(max_examples=400, deadline=None)
@given(spec=filters, lines=st.lists(any_line, max_size=8))
@pytest.mark.slow  # over a second: the full suite runs it, the fast lane does not
def test_any_filter_and_line_agree_with_line_matcher(spec: str, lines: list[bytes]) -> None:
    try:
        oracle = LineMatcher(spec)
    except ValueError:
        with pytest.raises(InvalidArgument):
            PrintFilter(spec)
        return
    ours = PrintFilter(spec)
    assert [ours.shows(line) for line in lines] == [oracle.match(monitor_text(line)) for line in lines]


@pytest.mark.parametrize(
    ("line", "fields"),
    [
        (
            b"\x1b[0;32mI (30) boot: ESP-IDF v3.1-dev-1320-gec1fb521b-dirty 2nd stage bootloader\x1b[0m",
            {
                "level": "I",
                "level_name": "info",
                "timestamp_ms": 30,
                "tag": "boot",
                "message": "ESP-IDF v3.1-dev-1320-gec1fb521b-dirty 2nd stage bootloader",
            },
        ),
        (
            b"E (623) foo: This is an example error",
            {"level": "E", "level_name": "error", "timestamp_ms": 623, "tag": "foo"},
        ),
        (
            b"\x1b[0;32mI (00:00:00.100) bar: This is an example with system time\x1b[0m",
            {
                "time": "00:00:00.100",
                "timestamp_ms": 100,
                "tag": "bar",
                "message": "This is an example with system time",
            },
        ),
        (
            b"I (20-02-02 12:34:56.789) baz: This is an example with system datetime",
            {"date": "20-02-02", "time": "12:34:56.789", "timestamp_ms": 45296789, "tag": "baz"},
        ),
        (
            b"\x1b[0;33mW (470) spi_flash: Detected size(4096k)\x1b[0m\r\n",
            {"level": "W", "message": "Detected size(4096k)"},
        ),
        (b"D (120) debug: key: value", {"tag": "debug", "message": "key: value"}),
    ],
)
def test_log_line_fields(line: bytes, fields: dict[str, Any]) -> None:
    parsed = build_parser({"type": "esp_log"}).parse(line)
    assert parsed.shown and parsed.fields["kind"] == "log"
    assert fields.items() <= parsed.fields.items()
    assert "\x1b" not in parsed.fields["message"]


def test_other_lines_are_text_with_colours_stripped() -> None:
    parser = build_parser({"type": "esp_log"})
    assert parser.parse(b"rst:0x10 (RTCWDT_RTC_RESET),boot:0x13 (SPI_FAST_FLASH_BOOT)\r\n").fields == {
        "kind": "text",
        "text": "rst:0x10 (RTCWDT_RTC_RESET),boot:0x13 (SPI_FAST_FLASH_BOOT)",
    }
    assert parser.parse(b"\x1b[0;32mmdf> \x1b[0m").fields == {"kind": "text", "text": "mdf> "}


@pytest.mark.parametrize(
    ("spec", "says"),
    [(":W", "no tag"), ("wifi:W:I", "more than one"), ("wifi:X", "'X' is not one of")],
)
def test_a_bad_filter_is_refused_with_what_to_write(spec: str, says: str) -> None:
    with pytest.raises(InvalidArgument, match=says) as info:
        build_parser({"type": "esp_log", "print_filter": spec})
    assert info.value.details.get("field") == "rx_parser.print_filter"
    with pytest.raises(ValueError):
        LineMatcher(spec)  # esp-idf-monitor refuses it too


def test_a_misspelt_option_is_refused_with_did_you_mean() -> None:
    with pytest.raises(InvalidArgument, match="print_filter"):
        build_parser({"type": "esp_log", "print_filer": "*:W"})


def test_decode_print_filter_keeps_what_line_matcher_keeps(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from serial_mcp import cli

    boot = INPUTS["in2.txt"]
    spec = "boot mdf_device_handle:I mesh:E vfs:I"
    assert cli.main(["decode", str(boot), "--print-filter", spec, "--format", "jsonl"]) == 0
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in out.splitlines()]
    oracle = LineMatcher(spec)
    kept = [line for line in monitor_lines("in2.txt") if oracle.match(monitor_text(line)) and line.strip()]
    assert [r["data"] for r in rows if r["data"]] == [line.rstrip(b"\r\n").decode() for line in kept]
    assert all(r["parsed"]["kind"] == "log" for r in rows if r["data"])
    hidden = len(decoded("in2.txt", "")[0]) - len(rows)
    assert f"{hidden} line(s) hidden" in err


def test_decode_print_filter_refuses_another_parser(capsys: pytest.CaptureFixture[str]) -> None:
    from serial_mcp import cli

    code = cli.main(["decode", str(INPUTS["color.txt"]), "--protocol", "nmea0183", "--print-filter", "*:W"])
    assert code != 0
    assert "needs the esp_log parser" in capsys.readouterr().err
