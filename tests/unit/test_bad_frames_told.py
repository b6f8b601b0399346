"""Issue 37.2: a bad frame is never silent. A transact's Modbus RTU reply is framed by its request's
function, so a reply whose CRC fails is a bad frame at once, with the CRC computed and received; a
passive read that ends while a damaged candidate waits says so."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client

from serial_mcp.core import checksums
from serial_mcp.core.decode import DecodedFrame, StreamDecoder
from serial_mcp.core.summary import bad_reason
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from tests.tool_calls import call

_crc = checksums.function("crc16_modbus")
REQUEST = bytes.fromhex("010300000001840a")  # read one holding register of unit 1
REPLY = bytes.fromhex("010302002a")  # its reply: the register holds 42
GOOD_CRC = _crc(REPLY)
BAD_REPLY = REPLY + (GOOD_CRC ^ 0x0101).to_bytes(2, "little")


@pytest.fixture
async def env() -> AsyncIterator[tuple[Client, FakeOpener]]:
    opener = FakeOpener()
    opener.add("bad", lambda data: BAD_REPLY if data == REQUEST else None)
    opener.add("dev")
    async with Client(build_server(ConnectionManager(opener))) as c:
        yield c, opener


async def _text(c: Client, name: str, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
    r = await c.call_tool(name, args)
    assert not r.is_error, r.content
    assert isinstance(r.structured_content, dict)
    return r.structured_content, "".join(getattr(part, "text", "") for part in r.content)


@pytest.mark.anyio
async def test_a_transact_reply_with_a_bad_crc_is_a_bad_frame_with_its_crcs(
    env: tuple[Client, FakeOpener],
) -> None:
    c, _ = env
    cid = (await call(c, "open", {"port": "bad", "protocol": "modbus_rtu"}))["connection_id"]
    got, text = await _text(
        c,
        "transact",
        {"connection_id": cid, "data": REQUEST[:-2].hex(), "encoding": "hex", "timeout_ms": 30_000},
    )
    read = got["read"]
    assert read["stop_reason"] == "final", got  # the bad reply ended the exchange: no wait for the timeout
    assert read.get("frames_dropped") == 1, got
    (bad,) = read["bad_frames"]
    want = f"computed {GOOD_CRC:04X}, received {GOOD_CRC ^ 0x0101:04X}"
    assert bad["offset"] == 0 and want in bad["reason"], bad
    assert want in text and read.get("buffered_remaining", 0) == 0, text


@pytest.mark.anyio
async def test_a_passive_read_that_ends_on_a_damaged_candidate_says_so(
    env: tuple[Client, FakeOpener],
) -> None:
    c, opener = env
    cid = (await call(c, "open", {"port": "dev", "protocol": "modbus_rtu"}))["connection_id"]
    opener.devices["dev"].feed(b"\x00" * 0 + BAD_REPLY)
    got, text = await _text(c, "read", {"connection_id": cid, "timeout_ms": 100})
    assert not got.get("frames"), got
    assert "1 damaged frame pending at offset 0" in text, text


def test_every_bad_frame_names_its_checksums() -> None:
    """NMEA, UBX and Modbus RTU frames with a bad checksum name the checksum they carry and the
    one their bytes give."""
    sentence = b"$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*48\r\n"  # good is 47
    ubx = bytes.fromhex("b56201350000") + b"\x37\xa4"  # NAV-SAT, empty; good checksum 36a3
    cases: list[tuple[Any, Any, bytes, str]] = [
        ({"type": "nmea"}, {"type": "nmea"}, sentence, "computed 47, received 48"),
        ({"type": "gnss"}, {"type": "gnss"}, ubx, "computed 36A3, received 37A4"),
        ({"type": "line"}, {"type": "modbus_ascii"}, b":010300000001FA\r\n", "computed FB, received FA"),
        (
            {"type": "modbus_rtu", "reply_to": REQUEST.hex()},
            {"type": "modbus_rtu"},
            BAD_REPLY,
            f"computed {GOOD_CRC:04X}, received {GOOD_CRC ^ 0x0101:04X}",
        ),
    ]
    body = b"\xaa\x55\x02hi"
    crc = _crc(body)
    binary = {"type": "binary", "sync": "AA55", "length": {"offset": 2, "size": 1},
              "checksum": {"algorithm": "crc16_modbus", "endianness": "little"}}  # fmt: skip
    delimited = {"type": "delimiter", "delimiter": "\n", "checksum": {"algorithm": "crc16_modbus"}}
    wrong = (crc ^ 0xFFFF).to_bytes(2, "little")
    cases += [
        (binary, None, body + wrong, f"computed {crc:04X}, received {crc ^ 0xFFFF:04X}"),
        (delimited, None, b"hi" + (_crc(b"hi") ^ 1).to_bytes(2, "big") + b"\n",
         f"computed {_crc(b'hi'):04X}, received {_crc(b'hi') ^ 1:04X}"),
    ]  # fmt: skip
    for framing, parser, data, want in cases:
        decoder = StreamDecoder(framing, parser)
        (frame,) = decoder.feed(data) + decoder.flush()
        assert isinstance(frame, DecodedFrame) and frame.checksum_valid is False, frame
        assert bad_reason(frame) == f"checksum ({want})", (framing, bad_reason(frame))


def test_a_torn_reply_to_a_request_stays_whole() -> None:
    """The reply's shape is known from the request: bytes that come in pieces, with a silence between
    them (a USB adapter's latency timer), still make one frame; our own request heard back is one too."""
    decoder = StreamDecoder({"type": "modbus_rtu", "reply_to": REQUEST.hex()}, {"type": "modbus_rtu"})
    reply = REPLY + GOOD_CRC.to_bytes(2, "little")
    events = decoder.feed(REQUEST + reply[:3]) + decoder.silence() + decoder.feed(reply[3:])
    frames = [e for e in events if isinstance(e, DecodedFrame)]
    assert [(f.start, f.end, f.checksum_valid) for f in frames] == [(0, 8, True), (8, 15, True)], events
    assert frames[1].parsed is not None and frames[1].parsed["registers"] == [42]


@pytest.mark.anyio
async def test_a_frame_returned_marked_bad_names_its_checksums(env: tuple[Client, FakeOpener]) -> None:
    c, opener = env
    cid = (await call(c, "open", {"port": "dev", "protocol": "nmea0183"}))["connection_id"]
    opener.devices["dev"].feed(b"$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*48\r\n")
    keep = {"type": "nmea", "validate": False}
    got, text = await _text(
        c, "read", {"connection_id": cid, "rx_parser": keep, "timeout_ms": 2000, "max_frames": 1}
    )
    (frame,) = got["frames"]
    assert frame["checksum_valid"] is False and frame["bad"] == "checksum (computed 47, received 48)", frame
    assert "#0 nmea GPGGA BAD checksum (computed 47, received 48): fix=gps" in text, text
