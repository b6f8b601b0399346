"""Decoded values in a framed read's text (issue 26 item 2): what the parser understood, short, with
the kind label; GNSS positions in decimal degrees and fix quality as a word."""

from __future__ import annotations

from functools import reduce
from pathlib import Path

import pytest
from mcp import Client
from pyubx2 import GET, UBXMessage  # type: ignore[import-untyped]

from serial_mcp.core.decode import StreamDecoder
from serial_mcp.core.frame_values import label_of, render, values_of
from serial_mcp.core.presets import get_preset
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from tests.tool_calls import call

RTCM = str(Path(__file__).resolve().parents[1] / "data" / "gnss" / "ublox-f9p-rtcm.log")


def nmea(body: str) -> bytes:
    return f"${body}*{reduce(lambda a, b: a ^ b, body.encode(), 0):02X}\r\n".encode()


def decoded(preset: str, data: bytes) -> list[str]:
    p = get_preset(preset)
    d = StreamDecoder(p.rx_framing, p.rx_parser, 0)
    return [
        f"{label_of(f.parsed)} {render(values_of(f.parsed))}".strip()
        for f in d.feed(data)
        if hasattr(f, "parsed")
    ]


def test_ubx_nav_pvt_in_degrees_with_the_fix_as_a_word() -> None:
    pvt = UBXMessage("NAV", "NAV-PVT", GET, lat=44.06881, lon=-121.3143, fixType=3, numSV=11, hMSL=1096200)
    assert decoded("gnss", pvt.serialize()) == [
        "ubx NAV-PVT fix=3D lat=44.06881 lon=-121.3143 height=0.0 alt=1096.2 sv=11 hacc=0.0 pdop=0.0"
    ]


def test_nmea_gga_in_decimal_degrees() -> None:
    gga = nmea("GPGGA,201530.00,4739.71892,N,12219.58364,W,1,14,0.9,76.5,M,-17.3,M,,")
    assert decoded("nmea0183", gga) == [
        "nmea GPGGA fix=gps sv=14 hdop=0.9 lat=47.661982 lon=-122.326394 alt=76.5"
    ]


def test_modbus_registers_and_at_finals() -> None:
    from serial_mcp.core.parsers.modbus_rtu import ModbusRtuParser

    reply = ModbusRtuParser().parse(bytes([1, 3, 6, 0x12, 0x34, 0x56, 0x78, 0x03, 0xEA])).fields
    assert (
        render(values_of(reply)) == "fc=03 addr=1 registers=[4660, 22136, 1002]"
        and label_of(reply) == "modbus"
    )
    assert decoded("at_command", b"AT+CSQ\r\n+CSQ: 20,99\r\nOK\r\n") == [
        "at echo AT+CSQ",
        "at response +CSQ: 20,99",
        "at final OK",
    ]


def test_rtcm3_on_a_real_log_is_labelled_with_its_message_number() -> None:
    with open(RTCM, "rb") as f:
        lines = decoded("gnss", f.read())
    assert "rtcm3 1077 sv=9" in lines and any(line.startswith("ubx NAV-PVT fix=") for line in lines), lines


@pytest.mark.anyio
async def test_the_default_text_of_a_framed_read_carries_the_values() -> None:
    opener = FakeOpener()
    dev = opener.add("dev")
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "dev", "protocol": "nmea0183"}))["connection_id"]
        dev.feed(nmea("GPGGA,201530.00,4739.71892,N,12219.58364,W,1,14,0.9,76.5,M,-17.3,M,,"))
        r = await c.call_tool("read", {"connection_id": cid, "max_frames": 1, "timeout_ms": 3000})
        text = r.content[0].text  # type: ignore[union-attr]
        assert "#0 nmea GPGGA ok: fix=gps sv=14 hdop=0.9 lat=47.661982 lon=-122.326394 alt=76.5" in text, text
