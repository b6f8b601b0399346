"""Capture file format v1 (core/capture.py): lossless round trip and clear, line-numbered errors."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from serial_mcp.core.capture import (
    FORMAT_NAME,
    CaptureError,
    CaptureEvent,
    CaptureHeader,
    capture_text,
    event_line,
    header_line,
    parse_capture,
    parse_header,
    settings_from_header,
    settings_to_header,
    utc_created,
)
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import InvalidArgument
from serial_mcp.store.capture_files import read_capture

CREATED = "2026-11-30T10:15:02.123456Z"
HEADER = json.dumps({"format": FORMAT_NAME, "version": 1, "created": CREATED})


def parse(*events: str | dict[str, object], header: str = HEADER) -> list[CaptureEvent]:
    lines = [header, *(e if isinstance(e, str) else json.dumps(e) for e in events)]
    return parse_capture(lines).events


def error_of(lines: list[str]) -> CaptureError:
    with pytest.raises(CaptureError) as info:
        parse_capture(lines)
    assert info.value.code == "capture_invalid"
    return info.value


# --- round trip -------------------------------------------------------------------------------------

SESSION = [
    CaptureEvent(0.0, "open"),
    CaptureEvent(0.012345, "rx", b"READY\r\n", offset=0),
    CaptureEvent(0.503, "tx", b"AT\r"),
    CaptureEvent(0.50412, "rx", b"OK\r\n", offset=7),
    CaptureEvent(0.6, "rx", bytes(range(256)), offset=11),  # every byte value, not UTF-8
    CaptureEvent(0.6, "tx", b"\x00\xff\xc3"),  # same t as the previous event: allowed
    CaptureEvent(1.0, "control", fields={"dtr": False, "rts": True}),
    CaptureEvent(1.1, "break", fields={"duration_ms": 250}),
    CaptureEvent(2.0, "config", fields={"settings": {"baudrate": 9600}}),
    CaptureEvent(2.5, "marker", fields={"label": "reset pressed"}),
    CaptureEvent(2.6, "lost", fields={"bytes": 4096}),
    CaptureEvent(3.0, "error", fields={"message": "device disconnected"}),
    CaptureEvent(3.0001, "close"),
]


def test_round_trip_keeps_every_event_byte_direction_and_order() -> None:
    header = CaptureHeader(
        created=CREATED,
        port="/dev/ttyUSB0",
        settings=settings_to_header(SerialSettings()),
        device={"vid": "0403", "pid": "6001"},
        source="serial-mcp test",
        note="héllo",
    )
    text = capture_text(header, SESSION)
    assert text.endswith("\n") and text.count("\n") == len(SESSION) + 1
    capture = parse_capture(text.split("\n"))
    assert capture.header == header
    assert capture.events == SESSION
    assert [e.type for e in capture.events] == [e.type for e in SESSION]
    assert capture.payload("rx") == b"READY\r\nOK\r\n" + bytes(range(256))
    assert capture.payload("tx") == b"AT\r\x00\xff\xc3"
    assert capture.skipped_unknown == 0 and capture.duration == pytest.approx(3.0001)


def test_lines_follow_the_spec_layout() -> None:
    line = event_line(CaptureEvent(0.012345, "rx", b"READY\r\n", offset=0))
    assert line == (
        '{"t": 0.012345, "type": "rx", "offset": 0, "data": "52454144590d0a", "text": "READY\\r\\n"}'
    )
    assert event_line(CaptureEvent(0.0, "open")) == '{"t": 0.000000, "type": "open"}'
    assert json.loads(header_line(CaptureHeader(created=CREATED))) == {
        "format": "serial-mcp-capture",
        "version": 1,
        "created": CREATED,
    }


def test_text_is_written_only_when_the_bytes_are_clean_utf8() -> None:
    assert json.loads(event_line(CaptureEvent(1, "rx", "µs °C".encode())))["text"] == "µs °C"
    assert "text" not in json.loads(event_line(CaptureEvent(1, "rx", b"\xff\xfe")))
    assert "text" not in json.loads(event_line(CaptureEvent(1, "rx", "é".encode()[:1])))  # torn char


def test_line_separators_inside_text_are_escaped() -> None:
    """U+2028, U+2029 and NEL would split the line for readers that use str.splitlines."""
    data = "a\u2028b\u2029c\x85d".encode()
    line = event_line(CaptureEvent(1, "rx", data))
    assert len(line.splitlines()) == 1
    assert parse(line)[0].data == data


@given(
    st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=10**6),
            st.sampled_from(["rx", "tx"]),
            st.binary(max_size=64),
        ),
        max_size=30,
    )
)
@pytest.mark.slow
def test_round_trip_property(chunks: list[tuple[int, str, bytes]]) -> None:
    """Any bytes in either direction, at microsecond times, come back identical and in order."""
    t = 0
    events = []
    for step, direction, data in chunks:
        t += step
        events.append(CaptureEvent(t / 1e6, direction, data))
    capture = parse_capture(capture_text(CaptureHeader(created=CREATED), events).split("\n"))
    assert [(e.type, e.data) for e in capture.events] == [(e.type, e.data) for e in events]
    assert [e.t for e in capture.events] == [e.t for e in events]


# --- reading rules ------------------------------------------------------------------------------------


def test_text_is_never_used_as_the_payload() -> None:
    (event,) = parse({"t": 0, "type": "rx", "data": "4f4b", "text": "NOT THE PAYLOAD"})
    assert event.data == b"OK"


def test_text_without_data_is_an_error_not_a_payload() -> None:
    err = error_of([HEADER, json.dumps({"t": 0, "type": "tx", "text": "AT\r"})])
    assert err.line == 2 and "text is never read" in err.message


def test_unknown_fields_are_ignored_and_kept() -> None:
    header = json.dumps({"format": FORMAT_NAME, "version": 1, "created": CREATED, "future": [1, 2]})
    (event,) = parse({"t": 1, "type": "marker", "label": "x", "colour": "red"}, header=header)
    assert event.fields == {"label": "x", "colour": "red"}


def test_unknown_event_types_are_skipped_and_counted() -> None:
    capture = parse_capture(
        [
            HEADER,
            json.dumps({"t": 0, "type": "rx", "data": "41"}),
            json.dumps({"t": 1, "type": "hologram", "data": "zz"}),
            json.dumps({"t": 2, "type": "hologram"}),
            json.dumps({"t": 3, "type": "telemetry", "x": 1}),
            json.dumps({"t": 4, "type": "rx", "data": "42"}),
        ]
    )
    assert capture.payload("rx") == b"AB"
    assert capture.skipped_unknown == 3
    assert capture.unknown_types == {"hologram": 2, "telemetry": 1}


def test_blank_lines_are_skipped_and_line_numbers_stay_physical() -> None:
    lines = [HEADER, "", json.dumps({"t": 1, "type": "open"}), "   ", json.dumps({"t": 0, "type": "close"})]
    assert error_of(lines).line == 5


def test_equal_times_are_allowed_but_time_never_goes_back() -> None:
    assert len(parse({"t": 1, "type": "open"}, {"t": 1, "type": "close"})) == 2
    err = error_of(
        [HEADER, json.dumps({"t": 2.5, "type": "open"}), json.dumps({"t": 2.4, "type": "rx", "data": ""})]
    )
    assert err.line == 3 and "earlier than the previous" in err.message


def test_unknown_types_still_have_to_keep_time_order() -> None:
    lines = [HEADER, json.dumps({"t": 5, "type": "future"}), json.dumps({"t": 1, "type": "open"})]
    assert error_of(lines).line == 3


@pytest.mark.parametrize(
    ("header", "fragment"),
    [
        ("not json", "not valid JSON"),
        ("[1, 2]", "JSON array, not an object"),
        (json.dumps({"version": 1, "created": CREATED}), "format is required"),
        (json.dumps({"format": "pcap", "version": 1, "created": CREATED}), 'not "serial-mcp-capture"'),
        (json.dumps({"format": FORMAT_NAME, "version": 2, "created": CREATED}), "version is not supported"),
        (
            json.dumps({"format": FORMAT_NAME, "version": True, "created": CREATED}),
            "version is not supported",
        ),
        (json.dumps({"format": FORMAT_NAME, "version": 1}), "created is required"),
        (json.dumps({"format": FORMAT_NAME, "version": 1, "created": "yesterday"}), "ISO 8601"),
        (json.dumps({"format": FORMAT_NAME, "version": 1, "created": 1700000000}), "ISO 8601"),
        (
            json.dumps({"format": FORMAT_NAME, "version": 1, "created": CREATED, "port": 3}),
            "port must be a string",
        ),
        (json.dumps({"t": 0, "type": "open"}), "the first line must be the header"),
    ],
)
def test_bad_headers_are_reported_on_line_1(header: str, fragment: str) -> None:
    err = error_of([header, json.dumps({"t": 0, "type": "open"})])
    assert err.line == 1
    assert fragment in err.message


def test_an_empty_capture_is_an_error() -> None:
    assert "empty" in error_of([]).message
    assert "empty" in error_of(["", "  "]).message


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ("4f4", "odd number of digits"),
        ("4g", "position 2 is not a hex digit"),
        ("4f 4b", "position 3 is not a hex digit"),
        ("0x41", "position 2 is not a hex digit"),
        (65, "not a string"),
        (None, "not a string"),
    ],
)
def test_bad_hex_names_the_line_and_the_problem(data: object, fragment: str) -> None:
    lines = [HEADER, json.dumps({"t": 0, "type": "open"}), json.dumps({"t": 1, "type": "rx", "data": data})]
    err = error_of(lines)
    assert err.line == 3
    assert "hex" in err.message and fragment in err.message


def test_uppercase_hex_is_accepted() -> None:
    (event,) = parse({"t": 0, "type": "rx", "data": "4F4B"})
    assert event.data == b"OK"


@pytest.mark.parametrize(
    ("event", "fragment"),
    [
        ('{"type": "open"}', "t is required"),
        ('{"t": -0.5, "type": "open"}', "t must be a finite number"),
        ('{"t": "1.0", "type": "open"}', "t must be a finite number"),
        ('{"t": true, "type": "open"}', "t must be a finite number"),
        ('{"t": NaN, "type": "open"}', "not valid JSON"),
        ('{"t": Infinity, "type": "open"}', "not valid JSON"),
        ('{"t": 1}', "type is required"),
        ('{"t": 1, "type": 7}', "type must be a string"),
        ('{"t": 1, "type": "rx"}', "data is required for a rx event"),
        ('{"t": 1, "type": "rx", "data": "41", "offset": -1}', "offset must be a whole number"),
        ('{"t": 1, "type": "lost"}', "bytes is required"),
        ('{"t": 1, "type": "lost", "bytes": 1.5}', "bytes must be a whole number"),
        ('{"t": 1, "type": "control", "dtr": "yes"}', "dtr must be true or false"),
        ('{"t": 1, "type": "break", "duration_ms": -3}', "duration_ms must be"),
        ('{"t": 1, "type": "config"}', "settings is required"),
        ('{"t": 1, "type": "config", "settings": [9600]}', "settings must be an object"),
        ('{"t": 1, "type": "marker", "label": 5}', "label must be a string"),
        ('"just a string"', "JSON string, not an object"),
    ],
)
def test_bad_events_name_their_line(event: str, fragment: str) -> None:
    err = error_of([HEADER, '{"t": 0, "type": "open"}', event])
    assert err.line == 3
    assert fragment in err.message


# --- files ------------------------------------------------------------------------------------------


def test_read_capture_tolerates_a_torn_last_line_only(tmp_path: Path) -> None:
    """A writer killed mid-line leaves an unterminated fragment: dropped and reported, not fatal."""
    good = capture_text(CaptureHeader(created=CREATED), SESSION[:3])
    torn = tmp_path / "torn.jsonl"
    torn.write_text(good + '{"t": 0.7, "type": "rx", "da', encoding="utf-8")
    capture = read_capture(torn)
    assert capture.torn_tail and capture.events == SESSION[:3]

    complete = tmp_path / "complete.jsonl"  # the same fragment with its newline is corruption
    complete.write_text(good + '{"t": 0.7, "type": "rx", "da\n', encoding="utf-8")
    with pytest.raises(CaptureError) as info:
        read_capture(complete)
    assert info.value.line == 5

    ok = tmp_path / "no-newline.jsonl"  # a valid last line without newline is simply read
    ok.write_text(good.rstrip("\n"), encoding="utf-8")
    assert read_capture(ok).events == SESSION[:3] and not read_capture(ok).torn_tail


def test_read_capture_reports_invalid_utf8_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(HEADER.encode() + b'\n{"t": 0, "type": "marker", "label": "\xff"}\n')
    with pytest.raises(CaptureError) as info:
        read_capture(path)
    assert info.value.line == 2 and "UTF-8" in info.value.message


def test_read_capture_accepts_a_bom_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "windows.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + HEADER.encode() + b'\r\n{"t": 0, "type": "rx", "data": "41"}\r\n')
    assert read_capture(path).payload("rx") == b"A"


# --- helpers ------------------------------------------------------------------------------------------


def test_settings_map_to_the_header_names_and_back() -> None:
    settings = SerialSettings(
        baud_rate=9600, data_bits=7, parity="even", stop_bits=2, flow_control="hardware"
    )
    values = settings_to_header(settings)
    assert values == {
        "baudrate": 9600,
        "bytesize": 7,
        "parity": "E",
        "stopbits": 2,
        "flow_control": "hardware",
    }
    assert settings_from_header(values) == settings
    assert settings_from_header({"baudrate": 57600}, base=settings) == SerialSettings(
        baud_rate=57600, data_bits=7, parity="even", stop_bits=2, flow_control="hardware"
    )
    with pytest.raises(InvalidArgument):
        settings_from_header({"baudrate": -1})


def test_created_is_utc_with_microseconds() -> None:
    when = datetime(2026, 11, 30, 10, 15, 2, 123456, tzinfo=UTC)
    assert utc_created(when) == CREATED
    assert parse_header(header_line(CaptureHeader(created=utc_created()))).created_at().tzinfo == UTC
    assert CaptureHeader(created=CREATED).created_at() == when


def test_writing_rejects_what_readers_would_reject() -> None:
    with pytest.raises(InvalidArgument):
        event_line(CaptureEvent(-1.0, "open"))
    with pytest.raises(InvalidArgument):
        event_line(CaptureEvent(float("nan"), "open"))
    with pytest.raises(InvalidArgument):
        event_line(CaptureEvent(1.0, "rx", None))
