"""Issue 37.1 on real receiver logs: a summary's totals and per-type counts are those of a
frame-by-frame read of the same bytes, bad frames included (``frames`` = ``valid`` + ``bad``), and
the values a user of the protocol expects are in it (GGA's HDOP; UBX latitude/longitude/height)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from serial_mcp.core.summary import type_key
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from tests.tool_calls import call
from tests.tool_calls import error as err

pytestmark = pytest.mark.anyio

DATA = Path(__file__).resolve().parents[1] / "data"
LOGS = [
    ("nmea/gpsdf.log", "nmea0183", {"type": "nmea", "validate": False}),  # 46 $PGLOR with wrong checksums
    ("nmea/st-teseo-liv4f.log", "nmea0183", {"type": "nmea", "validate": False}),  # one bad checksum
    ("gnss/ublox-zed-f9p-rtk.log", "gnss", {"type": "gnss", "validate": False}),
]


async def _summary_and_read(
    data: bytes, protocol: str, keep_bad: dict[str, Any] | None = None
) -> tuple[Any, str, Any]:
    """The summary of ``data`` and, with ``keep_bad`` (a parser that keeps bad frames), a
    frame-by-frame read of it."""
    opener = FakeOpener()
    opener.add("dev").feed(data)
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "dev", "protocol": protocol}))["connection_id"]
        window = {"connection_id": cid, "from": 0, "timeout_ms": 5000}
        r = await c.call_tool("read", {**window, "summary": True, "to": len(data)})
        assert not r.is_error and isinstance(r.structured_content, dict), r.content
        text = "".join(getattr(p, "text", "") for p in r.content)
        if keep_bad is None:
            return r.structured_content["counts"], text, None
        ref = await call(
            c,
            "read",
            {**window, "max_frames": 10_000, "max_bytes": 1 << 22, "idle_ms": 50, "rx_parser": keep_bad},
        )
    return r.structured_content["counts"], text, ref


@pytest.mark.parametrize(("name", "protocol", "keep_bad"), LOGS)
async def test_a_summary_of_a_real_log_counts_what_a_frame_by_frame_read_returns(
    name: str, protocol: str, keep_bad: dict[str, Any]
) -> None:
    data = (DATA / name).read_bytes()
    counts, text, ref = await _summary_and_read(data, protocol, keep_bad)
    frames = ref["frames"]
    assert ref["next_offset"] == len(data) and ref["stop_reason"] in ("idle", "timeout"), ref["stop_reason"]
    bad = [f for f in frames if f["checksum_valid"] is False]
    assert (counts["frames"], counts["valid"], counts["bad"]) == (
        len(frames),
        len(frames) - len(bad),
        len(bad),
    )
    assert {k: t["n"] for k, t in counts["types"].items()} == dict(
        Counter(type_key(f["parsed"]) for f in frames)
    )
    assert {k: t.get("bad", 0) for k, t in counts["types"].items() if t.get("bad")} == dict(
        Counter(type_key(f["parsed"]) for f in bad)
    )
    if bad:
        assert f"{len(frames)} frame(s): {len(frames) - len(bad)} valid, {len(bad)} bad" in text, text
        assert "computed" in text and "received" in text  # each named bad frame says how its checksum failed


async def test_gpsdf_names_46_bad_pglor_sentences_among_all_of_them() -> None:
    """The issue's own case: every count says what it counts; a type's n includes its bad frames."""
    counts, text, _ = await _summary_and_read((DATA / "nmea/gpsdf.log").read_bytes(), "nmea0183")
    pglor = counts["types"]["nmea PGLOR"]
    assert pglor["bad"] == 46 and pglor["n"] == pglor["valid"] + 46
    assert f"nmea PGLOR {pglor['n']} ({pglor['valid']} valid, 46 bad)" in text


async def test_the_values_a_user_expects_are_in_the_summary() -> None:
    counts, _, _ = await _summary_and_read((DATA / "gnss/ublox-zed-f9p-rtk.log").read_bytes(), "gnss")
    for kind in ("ubx NAV-POSECEF", "ubx NAV-PVT"):
        last = counts["types"][kind]["last"]
        assert abs(last["lat"] - 47.12909) < 1e-4 and abs(last["lon"] - 15.21204) < 1e-4, last
        assert 860 < last["height"] < 880, last  # metres above the ellipsoid, from ECEF centimetres
    assert "hdop" in counts["types"]["ubx NAV-DOP"]["last"]
    gga = b"$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47\r\n"
    counts, _, _ = await _summary_and_read(gga * 3, "nmea0183")
    assert counts["types"]["nmea GPGGA"]["last"] == {
        "fix": "gps", "sv": 8, "hdop": 0.9, "lat": 48.1173, "lon": 11.516667, "alt": 545.4,
    }  # fmt: skip


async def test_unknown_fields_are_refused_with_the_closest_name() -> None:
    opener = FakeOpener()
    opener.add("dev")
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "dev", "protocol": "nmea0183"}))["connection_id"]
        args = {"connection_id": cid, "summary": True, "timeout_ms": 0}
        e = await err(c, "read", {**args, "fields": ["hdp"]})
        assert e["code"] == "invalid_argument" and "'hdop'" in e["message"], e
        ok = await call(c, "read", {**args, "fields": ["hdop", "numSV", "registers[2]"]})
        assert ok["counts"]["frames"] == 0
