"""Protocols over a real PTY: an NMEA talker streaming a real receiver log, an AT modem behind transact."""

from __future__ import annotations

import random
import threading
from pathlib import Path

import pytest

from serial_mcp.core.connection_options import ConnectionOptions
from serial_mcp.engine import read_plan, writing
from serial_mcp.serial import reader
from serial_mcp.serial.manager import ConnectionManager
from tests.pty.devices import AtResponder, PtyDevice
from tests.unit.test_parsers_nmea import independent_count

pytestmark = pytest.mark.anyio

DATA = Path(__file__).parents[1] / "data" / "nmea"


def trickle(dev: PtyDevice, data: bytes, seed: int) -> None:
    """Send ``data`` in random pieces (1..300 bytes), so frames are torn across pump chunks."""
    rnd = random.Random(seed)
    i = 0
    while i < len(data):
        n = rnd.randint(1, 300)
        dev.send(data[i : i + n])
        i += n


@pytest.mark.parametrize("log", ["gpsdf.log", "quectel-l76k-nmea.log", "st-teseo-liv4f.log"])
async def test_nmea_talker_streamed_while_reading_in_small_pieces_loses_no_frame(
    log: str, manager: ConnectionManager, pty_factory: list[PtyDevice]
) -> None:
    data = (DATA / log).read_bytes()
    expected = independent_count(data)
    dev = PtyDevice().start()
    pty_factory.append(dev)
    conn = await manager.open(dev.path, options=ConnectionOptions(protocol="nmea0183"))
    writer = threading.Thread(target=trickle, args=(dev, data, 3), daemon=True)
    writer.start()
    spec = read_plan.decode_spec(read_plan.codecs(conn))
    assert spec is not None
    frames = []
    dropped = 0
    pos = 0
    while pos < len(data):
        req = reader.build_read_request(timeout_ms=10_000, idle_ms=100, max_frames=7, decode=spec)
        out = await reader.read(conn, req)  # max_frames alone would wait for 7 at the end of the log
        assert out.stop_reason in ("max_frames", "idle"), out.stop_reason
        assert out.bytes_lost == 0
        frames += out.frames or []
        dropped += out.frames_dropped or 0
        pos = out.next_offset
    writer.join(10)
    good = [f for f in frames if f.checksum_valid is True]
    unchecked = [
        f for f in frames if f.checksum_valid is None and f.parsed and f.parsed.get("kind") != "other"
    ]
    assert len(good) == expected["good"]
    assert dropped == expected["bad"]
    assert len(unchecked) == expected["unchecked"]
    assert len(frames) + dropped == expected["lines"]
    offsets = [f.start for f in frames]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
    for f in frames[:50]:  # every frame's bytes are exactly the log's bytes at its offset
        assert data[f.start : f.start + len(f.data)] == f.data


async def test_transact_at_command_returns_parsed_final_status(
    manager: ConnectionManager, pty_factory: list[PtyDevice]
) -> None:
    dev = PtyDevice(AtResponder()).start()
    pty_factory.append(dev)
    conn = await manager.open(dev.path)
    resolved = read_plan.codecs(conn, protocol="at_command")
    body = writing.payload("AT+ECHO=+CSQ: 23,99", "utf8", resolved.tx_framing)
    assert body == b"AT+ECHO=+CSQ: 23,99\r"
    req = reader.build_read_request(timeout_ms=5000, decode=read_plan.decode_spec(resolved))
    async with conn.tx.turn():
        mark = conn.snapshot().end_offset
        await conn.tx.write_locked(body)
        out = await reader.read(conn, req, start=mark)
    assert out.stop_reason == "final"
    assert out.frames is not None
    parsed = [f.parsed for f in out.frames]
    assert parsed[-1] is not None and parsed[-1]["kind"] == "final" and parsed[-1]["status"] == "OK"
    assert any(p and p.get("kind") == "response" and p.get("command") == "+CSQ" for p in parsed)
