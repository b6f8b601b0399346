"""The view's data, checked in Python against the captures and against ``serial-mcp decode``."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from serial_mcp.commands import decode as decode_command
from serial_mcp.store.capture_files import read_capture
from serial_mcp.view.model import ViewOptions, build_view
from serial_mcp.view.transcript import MAX_ROW
from tests.view.helpers import DATA, SAMPLES, capture_from_raw, data_event_counts, frame_list, nmea_sentences

SAMPLE_FILES = sorted(SAMPLES.glob("*.jsonl"))
PROTOCOLS = {
    "gps-quectel-l76k": "nmea0183",
    "gps-gpsdf-bad-checksums": "nmea0183",
    "modbus-ascii-delta": "modbus_ascii",
    "at-modem-session": "at_command",
}


def view_of(path: Path, protocol: str | None = None, **kw: Any) -> dict[str, Any]:
    return build_view(path.read_bytes(), path.name, ViewOptions(protocol=protocol, **kw))


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.stem)
def test_every_sample_capture_is_viewed_whole(path: Path) -> None:
    data = view_of(path, PROTOCOLS.get(path.stem))
    capture = read_capture(path)
    rx, tx = data_event_counts(path)
    tl = data["timeline"]
    assert len(tl["t"]) == rx + tx
    assert tl["dir"].count("r") == rx and tl["dir"].count("t") == tx
    assert data["meta"]["rx_bytes"] == len(capture.payload("rx"))
    assert data["meta"]["tx_bytes"] == len(capture.payload("tx"))
    assert data["meta"]["port"] == capture.header.port
    # the transcript holds every byte, in order, per direction
    for d, name in (("r", "rx"), ("t", "tx")):
        rows = [r for r in data["rows"] if r[1] == d]
        joined = b"".join(bytes.fromhex(r[4]) if r[3] == 1 else r[4].encode() for r in rows)
        assert joined == capture.payload(name)
        positions = [r[2] for r in rows]
        assert positions == sorted(positions)
    non_data = [e for e in capture.events if e.type not in ("rx", "tx")]
    detected = [m for m in tl["markers"] if m[1] in ("boot", "reset", "crash", "boot_loop")]  # issue 24
    assert len(tl["markers"]) - len(detected) == len(non_data)
    assert sum(r[1] == "m" for r in data["rows"]) == len(non_data)


@pytest.mark.parametrize("stem", sorted(PROTOCOLS))
def test_frames_are_exactly_what_decode_prints(stem: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = SAMPLES / f"{stem}.jsonl"
    data = view_of(path, PROTOCOLS[stem])
    out = io.StringIO()
    decode_command.run_decode(str(path), PROTOCOLS[stem], None, None, "jsonl", "both", out)
    decoded = [json.loads(line) for line in out.getvalue().splitlines()]
    capture = read_capture(path)
    frames = frame_list(data, {"rx": capture.payload("rx"), "tx": capture.payload("tx")})
    kept = [f for f in frames if f["valid"] is not False]  # decode drops the bad ones when validating
    assert [(f["dir"], f["offset"], f["data"].decode()) for f in kept] == [
        (d["dir"][0], d["offset"], d["data"]) for d in decoded
    ]
    assert [f["t"] for f in kept] == [round(d["t"], 6) for d in decoded]


@pytest.mark.parametrize("stem", sorted(PROTOCOLS))
def test_view_decoding_equals_decode_commands_function(stem: str) -> None:
    from serial_mcp.view import frames

    raw = (SAMPLES / f"{stem}.jsonl").read_bytes()
    streams = decode_command.load_streams(raw)
    rx_framing, rx_parser = frames.resolve_settings(PROTOCOLS[stem], None, None)
    for parser in (rx_parser, {**rx_parser, "validate": False}, None):
        expected, _ = decode_command.decode_streams(streams, rx_framing, parser, ("rx", "tx"))
        assert frames.decode_streams(streams, rx_framing, parser, ("rx", "tx")) == expected


def test_bad_nmea_checksums_are_kept_marked_and_counted() -> None:
    path = SAMPLES / "gps-gpsdf-bad-checksums.jsonl"
    data = view_of(path, "nmea0183")
    expected_bad = sum(not ok for _, ok in nmea_sentences(read_capture(path).payload("rx")))
    frames = data["frames"]
    assert expected_bad == 4
    assert frames["bad"] == expected_bad == frames["would_drop"]
    listed = frame_list(data, {"rx": read_capture(path).payload("rx"), "tx": b""})
    bad = [f for f in listed if f["valid"] is False]
    assert len(bad) == expected_bad and all(
        f["kind"] == "PGLOR" and f["data"].startswith(b"$PGLOR") for f in bad
    )
    counts = dict(zip(frames["kinds"], frames["kind_counts"], strict=True))
    assert counts["PGLOR"] >= 4 and counts["GGA"] >= 1
    assert frames["data"] == []  # every frame is its wire bytes: read from the transcript
    gga = next(f for f in listed if f["kind"] == "GGA")
    assert gga["note"].startswith("fix_quality=1 satellites=")


def test_nmea_plots_follow_the_sentences() -> None:
    path = SAMPLES / "gps-quectel-l76k.jsonl"
    data = view_of(path, "nmea0183", fields=["GGA.satellites", "altitude_m"])
    gga = [a for a, ok in nmea_sentences(read_capture(path).payload("rx")) if ok and a.endswith("GGA")]
    names = [s["name"] for s in data["series"]]
    assert names == ["GGA.satellites", "GGA.altitude_m"]
    for s in data["series"]:
        assert len(s["t"]) == len(s["v"]) == len(gga)
        assert s["t"] == sorted(s["t"])
    assert data["meta"]["fields_missing"] == []
    assert "RMC.speed_kn" in data["meta"]["series_available"]


def test_default_plots_are_the_few_that_vary() -> None:
    data = view_of(SAMPLES / "gps-gpsdf-bad-checksums.jsonl", "nmea0183")
    assert 1 <= len(data["series"]) <= 4
    for s in data["series"]:
        assert min(s["v"]) != max(s["v"])


def test_unknown_field_is_reported_not_fatal() -> None:
    data = view_of(SAMPLES / "gps-quectel-l76k.jsonl", "nmea0183", fields=["no_such_field"])
    assert data["series"] == [] and data["meta"]["fields_missing"] == ["no_such_field"]


def test_modbus_register_values_are_plotted_by_register() -> None:
    data = view_of(SAMPLES / "modbus-ascii-delta.jsonl", "modbus_ascii", fields=["slave1.reg0x1001"])
    assert [s["name"] for s in data["series"]] == ["slave1.reg0x1001"]
    assert data["series"][0]["v"]


def test_json_lines_numeric_keys_become_series(tmp_path: Path) -> None:
    lines = b"".join(
        b'{"temp": %d, "hum": {"rel": %d}, "ok": true, "id": "x"}\n' % (20 + i % 3, 40 + i) for i in range(30)
    )
    path = capture_from_raw(lines, tmp_path / "sensor.jsonl", chunk_lines=1)
    data = view_of(path, "json_lines")
    assert {s["name"] for s in data["series"]} == {"temp", "hum.rel"}
    assert all(len(s["v"]) == 30 for s in data["series"])


def test_ubx_messages_are_named_and_plotted(tmp_path: Path) -> None:
    from pyubx2 import UBXMessage  # type: ignore[import-untyped]  # (no stubs; as in core/parsers/gnss.py)

    from serial_mcp.core.capture import CaptureEvent, CaptureHeader, capture_text

    sats = [5, 7, 9, 9, 11, 12]
    events = [
        CaptureEvent(
            float(i), "rx", UBXMessage("NAV", "NAV-PVT", 0, iTOW=1000 * i, numSV=n, hMSL=1000 + i).serialize()
        )
        for i, n in enumerate(sats)
    ]
    path = tmp_path / "ubx.jsonl"
    path.write_text(capture_text(CaptureHeader(created="2026-12-01T10:00:00Z"), events))
    data = view_of(path, "gnss")
    assert dict(zip(data["frames"]["kinds"], data["frames"]["kind_counts"], strict=True)) == {
        "ubx NAV-PVT": 6
    }
    series = {s["name"]: s for s in data["series"]}
    assert series["NAV-PVT.numSV"]["v"] == [float(n) for n in sats]
    assert "NAV-PVT.iTOW" not in data["meta"]["series_available"]  # a counter, not a measurement


def test_esp32_markers_and_gaps() -> None:
    data = view_of(SAMPLES / "esp32-boot.jsonl")
    kinds = [m[1] for m in data["timeline"]["markers"]]
    assert kinds.count("control") == 2 and "open" in kinds and "close" in kinds
    gaps = data["timeline"]["gaps"]
    assert gaps and all(b - a > 1.0 for a, b in gaps)
    assert data["frames"] is None and data["series"] == []


def test_line_control_break_config_respond_lost_reconnect_markers(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(
        "\n".join(
            [
                '{"format": "serial-mcp-capture", "version": 1, "created": "2026-12-01T10:00:00Z"}',
                '{"t": 0.0, "type": "open", "port": "/dev/ttyX"}',
                '{"t": 0.1, "type": "control", "dtr": false, "rts": true}',
                '{"t": 0.2, "type": "break", "duration_ms": 250}',
                '{"t": 0.3, "type": "config", "settings": {"baudrate": 9600}}',
                '{"t": 0.4, "type": "rx", "offset": 0, "data": "50726573732061206b65790d0a"}',
                '{"t": 0.5, "type": "tx", "data": "0d", "respond": true}',
                '{"t": 0.6, "type": "lost", "bytes": 17}',
                '{"t": 0.7, "type": "error", "message": "device disconnected"}',
                '{"t": 3.0, "type": "marker", "label": "reconnect", "attempts": 3, "offset": 13}',
                '{"t": 3.1, "type": "rx", "offset": 30, "data": "ff00fe01"}',
                '{"t": 3.2, "type": "future_kind"}',
            ]
        )
        + "\n"
    )
    data = view_of(path)
    markers = data["timeline"]["markers"]
    assert [m[1] for m in markers] == [
        "open",
        "control",
        "break",
        "config",
        "respond",
        "lost",
        "error",
        "reconnect",
    ]
    assert (
        markers[1][2] == "DTR=0 RTS=1"
        and markers[2][2] == "BREAK 250 ms"
        and markers[5][2] == "lost 17 bytes"
    )
    assert markers[7][2] == "reconnected after 3 attempt(s)"
    assert data["meta"]["lost_bytes"] == 17 and data["meta"]["skipped_unknown"] == 1
    assert data["timeline"]["gaps"] == [[0.5, 3.1]]
    binary = [r for r in data["rows"] if r[3] == 1]
    assert binary and binary[-1][4] == "ff00fe01"


def test_transformed_frames_carry_their_own_bytes(tmp_path: Path) -> None:
    packets = [b"\x01\xc0\x02", b"hello", b"\xc0z\xdb"]  # SLIP: END and ESC inside get escaped
    wire = b"".join(
        b"\xc0" + p.replace(b"\xdb", b"\xdb\xdd").replace(b"\xc0", b"\xdb\xdc") + b"\xc0" for p in packets
    )
    path = capture_from_raw(wire, tmp_path / "slip.jsonl", chunk_lines=1)
    data = view_of(path, "slip")
    frames = frame_list(data, {"rx": read_capture(path).payload("rx"), "tx": b""})
    assert [f["data"] for f in frames] == packets
    assert {i for i, _, _ in data["frames"]["data"]} == {0, 2}  # "hello" is its own wire bytes


def test_long_lines_and_binary_are_cut_into_rows(tmp_path: Path) -> None:
    blob = bytes(range(256)) * 8  # 2 kB, no line ending
    path = capture_from_raw(blob, tmp_path / "blob.jsonl", chunk_lines=1)
    rows = view_of(path)["rows"]
    data_rows = [r for r in rows if r[1] == "r"]
    assert all(len(bytes.fromhex(r[4])) <= MAX_ROW for r in data_rows if r[3] == 1)
    assert sum(len(bytes.fromhex(r[4])) if r[3] == 1 else len(r[4].encode()) for r in data_rows) == len(blob)


def test_a_raw_log_is_viewed_as_decode_reads_it() -> None:
    raw = (DATA / "nmea" / "gpsdf.log").read_bytes()
    data = build_view(raw, "gpsdf.log", ViewOptions(protocol="nmea0183"))
    assert data["meta"]["raw_input"] is True
    assert data["timeline"]["n"] == [len(raw)]
    assert data["frames"]["bad"] == sum(not ok for _, ok in nmea_sentences(raw)) > 0


@pytest.mark.parametrize(
    ("relative", "protocol"),
    [
        ("nmea/gpsdf.log", "nmea0183"),
        ("nmea/quectel-l76k-nmea.log", "nmea0183"),
        ("nmea/unicore-um621.log", "nmea0183"),
        ("bootlogs/openwrt-M32/Bootlog.txt", None),
        ("bootlogs/esp32/esp32-mdf-boot.txt", None),
    ],
)
def test_real_device_data_made_into_captures(tmp_path: Path, relative: str, protocol: str | None) -> None:
    raw = (DATA / relative).read_bytes()
    path = capture_from_raw(raw, tmp_path / "real.jsonl", baud=115200, pause_every=20, pause_s=2.5)
    data = view_of(path, protocol)
    chunks = (len(raw.splitlines()) + 7) // 8
    assert len(data["timeline"]["t"]) == chunks
    assert len(data["timeline"]["gaps"]) == (chunks - 1) // 20
    if protocol:
        sentences = nmea_sentences(raw)
        assert data["frames"]["bad"] == sum(not ok for _, ok in sentences)
        assert sum(v in "01" for v in data["frames"]["valid"]) >= len(sentences)
