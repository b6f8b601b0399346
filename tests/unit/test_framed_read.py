"""Framed reads over the fake opener: decoder state on the cursor, presets, precedence, TX framing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import reduce

import pytest
from mcp import Client

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from tests.tool_calls import call
from tests.tool_calls import error as err

pytestmark = pytest.mark.anyio

GGA = b"$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47\r\n"


def nmea(body: str) -> bytes:
    cs = reduce(lambda a, b: a ^ b, body.encode(), 0)
    return f"${body}*{cs:02X}\r\n".encode()


@pytest.fixture
async def env() -> AsyncIterator[tuple[Client, FakeOpener]]:
    opener = FakeOpener()
    opener.add("dev")
    async with Client(build_server(ConnectionManager(opener))) as c:
        yield c, opener


async def settle(c: Client, cid: str, total: int) -> None:
    """Wait until the ring holds ``total`` bytes: a raw read from offset 0 ends (event-driven) once it has them.
    An explicit ``from`` moves no cursor, so the reads under test are unaffected."""
    r = await call(
        c,
        "read",
        {"connection_id": cid, "from": 0, "protocol": "raw", "max_bytes": total, "timeout_ms": 10_000},
    )
    assert r["next_offset"] == total, r


async def test_frame_torn_across_reads_is_decoded_whole(env: tuple[Client, FakeOpener]) -> None:
    c, opener = env
    cid = (await call(c, "open", {"port": "dev", "protocol": "nmea0183"}))["connection_id"]
    dev = opener.devices["dev"]
    dev.feed(GGA[:20])
    await settle(c, cid, 20)
    first = await call(c, "read", {"connection_id": cid, "timeout_ms": 50})
    assert first["frames"] == [] and first["stop_reason"] == "timeout"
    dev.feed(GGA[20:])
    second = await call(c, "read", {"connection_id": cid, "timeout_ms": 2000, "verbose": True})
    assert len(second["frames"]) == 1, second
    frame = second["frames"][0]
    # per-frame t only on request (issue 26: verbose)
    assert frame["data"] == GGA[:-2].decode() and frame["offset"] == 0 and frame["t"] is not None
    assert frame["parsed"]["sentence"] == "GGA" and frame["parsed"]["talker"] == "GP"
    assert frame["checksum_valid"] is True
    assert second["next_offset"] == len(GGA)


async def test_bad_checksums_are_dropped_and_counted(env: tuple[Client, FakeOpener]) -> None:
    c, opener = env
    cid = (await call(c, "open", {"port": "dev", "protocol": "nmea0183"}))["connection_id"]
    good = nmea("GPRMC,1,A")
    bad = nmea("GPRMC,2,A").replace(b"*", b"*F").replace(b"\r", b"")[:-1] + b"\r\n"
    opener.devices["dev"].feed(good + bad + good)
    r = await call(c, "read", {"connection_id": cid, "timeout_ms": 2000, "idle_ms": 50})
    assert len(r["frames"]) == 2 and r["frames_dropped"] == 1
    loose = await call(
        c,
        "read",
        {
            "connection_id": cid,
            "from": 0,
            "rx_parser": {"type": "nmea", "validate": False},
            "timeout_ms": 100,
        },
    )
    assert [f["checksum_valid"] for f in loose["frames"]] == [True, False, True]


@pytest.mark.slow
async def test_max_frames_leaves_the_rest_for_the_next_read(env: tuple[Client, FakeOpener]) -> None:
    c, opener = env
    cid = (await call(c, "open", {"port": "dev", "rx_framing": {"type": "line", "ending": "lf"}}))[
        "connection_id"
    ]
    opener.devices["dev"].feed(b"a\nb\nc\nd\n")
    await settle(c, cid, 8)
    r1 = await call(c, "read", {"connection_id": cid, "max_frames": 3})
    assert [f["data"] for f in r1["frames"]] == ["a", "b", "c"] and r1["stop_reason"] == "max_frames"
    assert r1["next_offset"] == 6
    r2 = await call(c, "read", {"connection_id": cid, "timeout_ms": 50})
    assert [f["data"] for f in r2["frames"]] == ["d"] and r2["frames"][0]["offset"] == 6
    # a raw read on the same cursor resumes at the consumed position
    opener.devices["dev"].feed(b"tail")
    raw = await call(c, "read", {"connection_id": cid, "protocol": "raw", "idle_ms": 20, "timeout_ms": 2000})
    assert raw["data"] == "tail" and raw["from_offset"] == 8


async def test_match_is_per_frame_and_final_ends_at_command_reads(env: tuple[Client, FakeOpener]) -> None:
    c, opener = env
    cid = (await call(c, "open", {"port": "dev", "protocol": "at_command"}))["connection_id"]
    opener.devices["dev"].feed(b"AT+CSQ\r\r\n+CSQ: 23,99\r\n\r\nOK\r\n+CREG: 1\r\n")
    r = await call(c, "read", {"connection_id": cid, "timeout_ms": 2000})
    assert r["stop_reason"] == "final"
    kinds = [f["parsed"]["kind"] for f in r["frames"]]
    assert kinds == ["echo", "response", "final"], r["frames"]
    assert r["frames"][-1]["parsed"]["status"] == "OK"
    m = await call(c, "read", {"connection_id": cid, "match": "CREG", "timeout_ms": 2000})
    assert m["matched"] and m["match_index"] == 0 and m["stop_reason"] == "match"


@pytest.mark.slow
async def test_slip_framing_error_returns_frames_then_resyncs(env: tuple[Client, FakeOpener]) -> None:
    c, opener = env
    cid = (await call(c, "open", {"port": "dev", "protocol": "slip"}))["connection_id"]
    opener.devices["dev"].feed(b"\xc0ab\xc0" + b"x\xdb\x01y\xc0" + b"cd\xc0")
    r = await call(c, "read", {"connection_id": cid, "timeout_ms": 2000, "encoding": "hex"})
    assert [f["data"] for f in r["frames"]] == ["6162"] and r["stop_reason"] == "framing_error" and r["error"]
    again = await call(c, "read", {"connection_id": cid, "timeout_ms": 200, "encoding": "hex", "idle_ms": 20})
    assert [f["data"] for f in again["frames"]] == ["6364"]


@pytest.mark.slow
async def test_precedence_call_field_over_call_preset_over_connection(env: tuple[Client, FakeOpener]) -> None:
    c, opener = env
    cid = (await call(c, "open", {"port": "dev", "protocol": "json_lines"}))["connection_id"]
    opener.devices["dev"].feed(b'{"a": 1}\nnot json\n')
    r = await call(c, "read", {"connection_id": cid, "timeout_ms": 2000, "idle_ms": 30})
    assert [f["parsed"]["kind"] for f in r["frames"]] == ["json", "raw"]
    assert r["frames"][0]["parsed"]["value"] == {"a": 1}
    r2 = await call(
        c, "read", {"connection_id": cid, "from": 0, "rx_parser": {"type": "raw"}, "timeout_ms": 50}
    )
    assert [f["parsed"]["kind"] for f in r2["frames"]] == ["raw", "raw"]
    r3 = await call(c, "read", {"connection_id": cid, "from": 0, "protocol": "raw", "timeout_ms": 50})
    assert r3["frames"] is None and r3["data"] == '{"a": 1}\nnot json\n'


@pytest.mark.slow
async def test_tx_framing_nmea_and_modbus(env: tuple[Client, FakeOpener]) -> None:
    c, opener = env
    cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
    await call(c, "write", {"connection_id": cid, "data": "$PMTK605", "protocol": "nmea0183"})
    await call(
        c,
        "write",
        {"connection_id": cid, "data": "01030000000a", "encoding": "hex", "protocol": "modbus_ascii"},
    )
    await call(c, "write", {"connection_id": cid, "data": "ATI", "protocol": "at_command"})
    written = bytes(opener.devices["dev"].written)
    assert written == b"$PMTK605*31\r\n" + b":01030000000AF2\r\n" + b"ATI\r"


@pytest.mark.slow
async def test_bad_framing_is_refused_before_anything_happens(env: tuple[Client, FakeOpener]) -> None:
    c, opener = env
    e = await err(c, "open", {"port": "dev", "rx_framing": {"type": "line", "endng": "lf"}})
    assert e["code"] == "invalid_argument" and "ending" in e["message"]
    assert (await call(c, "list_connections", {}))["connections"] == []
    cid = (await call(c, "open", {"port": "dev"}))["connection_id"]
    e = await err(c, "transact", {"connection_id": cid, "data": "AT\r", "protocol": "at_cmd"})
    assert e["code"] == "invalid_argument" and "at_command" in e["message"]
    assert bytes(opener.devices["dev"].written) == b""


@pytest.mark.slow
async def test_compute_checksum_tool(env: tuple[Client, FakeOpener]) -> None:
    c, _ = env
    r = await call(c, "compute_checksum", {"data": "123456789", "algorithm": "CRC-16/MODBUS"})
    assert (r["checksum"], r["checksum_hex"]) == (0x4B37, "4b37")
    r = await call(
        c, "compute_checksum", {"data": "313233343536373839", "encoding": "hex", "algorithm": "crc32"}
    )
    assert r["checksum_hex"] == "cbf43926"
    e = await err(c, "compute_checksum", {"data": "x", "algorithm": "crc16_modbuss"})
    assert e["code"] == "invalid_argument" and "crc16_modbus" in e["message"]
