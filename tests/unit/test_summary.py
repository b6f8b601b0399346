"""read(summary=true): a window's counts are those of a frame-by-frame read of the same bytes, the
cursor's consumed frames are all counted, and the summary stays small whatever the stream."""

from __future__ import annotations

import json
import random
from collections import Counter
from functools import reduce
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from serial_mcp.core import checksums
from serial_mcp.core.decode import StreamDecoder
from serial_mcp.core.summary import MAX_TYPES, StreamSummary, type_key
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from tests.tool_calls import call, error

_fletcher = checksums.function("ubx")


def nmea(body: str, good: bool = True) -> bytes:
    cs = reduce(lambda a, b: a ^ b, body.encode(), 0) ^ (0 if good else 1)
    return f"${body}*{cs:02X}\r\n".encode()


def ubx(cls: int, mid: int, payload: bytes, good: bool = True) -> bytes:
    body = bytes([cls, mid]) + len(payload).to_bytes(2, "little") + payload
    ck = _fletcher(body) ^ (0 if good else 1)
    return b"\xb5\x62" + body + ck.to_bytes(2, "little")


SENTENCES = [
    "GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
    "GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W",
    "GPGSV,3,1,11,03,03,111,00,04,15,270,00,06,01,010,00,13,06,292,00",
    "GNGLL,4807.038,N,01131.000,E,123519,A,A",
]


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    """NMEA and UBX frames, some with bad checksums, with garbage between some of them."""
    out = b""
    for _ in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(["nmea", "bad_nmea", "ubx", "bad_ubx", "garbage"]))
        if kind in ("nmea", "bad_nmea"):
            out += nmea(draw(st.sampled_from(SENTENCES)), kind == "nmea")
        elif kind in ("ubx", "bad_ubx"):
            cls, mid, size = draw(st.sampled_from([(1, 2, 28), (1, 3, 16), (13, 1, 16)]))
            out += ubx(cls, mid, draw(st.binary(min_size=size, max_size=size)), kind == "ubx")
        else:
            out += draw(st.binary(min_size=1, max_size=12)).replace(b"\xb5", b"").replace(b"$", b"")
    return out


async def _settle(c: Client, cid: str, total: int) -> None:
    r = await call(
        c,
        "read",
        {
            "connection_id": cid,
            "from": 0,
            "protocol": "raw",
            "encoding": "hex",
            "max_bytes": total,
            "timeout_ms": 10_000,
        },
    )
    assert r["next_offset"] == total


@st.composite
def damaged_streams(draw: st.DrawFn) -> bytes:
    """:func:`streams` with random damage on top: bytes flipped, dropped or inserted anywhere."""
    data = bytearray(draw(streams()))
    for _ in range(draw(st.integers(0, 4))):
        if not data:
            break
        i = draw(st.integers(0, len(data) - 1))
        op = draw(st.sampled_from(["flip", "drop", "insert"]))
        if op == "flip":
            data[i] ^= draw(st.integers(1, 255))
        elif op == "drop":
            del data[i]
        else:
            data.insert(i, draw(st.integers(0, 255)))
    return bytes(data)


async def _summary_and_reference(stream: bytes, a: int, b: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The summary of ``stream[a:b]`` and a frame-by-frame read of the same bytes that keeps its bad
    frames (``validate`` off: each comes back marked ``checksum_valid`` false)."""
    opener = FakeOpener()
    whole, window = opener.add("whole"), opener.add("window")
    async with Client(build_server(ConnectionManager(opener))) as c:
        one = (await call(c, "open", {"port": "whole", "protocol": "gnss"}))["connection_id"]
        two = (await call(c, "open", {"port": "window", "protocol": "gnss"}))["connection_id"]
        whole.feed(stream)
        await _settle(c, one, len(stream))
        got = await call(
            c, "read", {"connection_id": one, "summary": True, "from": a, "to": b, "timeout_ms": 0}
        )
        ref: dict[str, Any] = {"frames": [], "skipped": 0}
        if b > a:
            window.feed(stream[a:b])
            await _settle(c, two, b - a)
            args = {"connection_id": two, "from": 0, "max_frames": 10_000, "timeout_ms": 0, "idle_ms": 1}
            r = await call(c, "read", {**args, "rx_parser": {"type": "gnss", "validate": False}})
            assert r["stop_reason"] != "framing_error", r
            ref = {"frames": r["frames"], "skipped": r["bytes_skipped"] or 0}
    return got, ref


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream=damaged_streams(), cut=st.tuples(st.floats(0, 1), st.floats(0, 1)))
@pytest.mark.slow  # over a second: the full suite runs it, the fast lane does not
def test_summary_counts_equal_a_frame_by_frame_read_of_the_window(
    stream: bytes, cut: tuple[float, float]
) -> None:
    """Issue 37.1: every frame of the window counted once, bad ones included: total = valid + bad,
    overall and per type, equal to what a frame-by-frame read returns."""
    a, b = sorted(int(x * len(stream)) for x in cut)
    got, ref = anyio.run(_summary_and_reference, stream, a, b)
    counts = got["counts"]
    frames = ref["frames"]
    assert got["stop_reason"] == "to" and got["from_offset"] == a
    bad = [f for f in frames if f["checksum_valid"] is False]
    assert (counts["frames"], counts["bad"]) == (len(frames), len(bad))
    assert counts["valid"] == counts["frames"] - counts["bad"]
    assert counts.get("bytes_skipped", 0) == ref["skipped"]
    types = counts["types"]
    assert {k: v["n"] for k, v in types.items()} == dict(Counter(type_key(f["parsed"]) for f in frames))
    assert {k: v["bad"] for k, v in types.items() if v.get("bad")} == dict(
        Counter(type_key(f["parsed"]) for f in bad)
    )
    assert all(v["n"] == v["valid"] + v.get("bad", 0) for v in types.values())


@settings(max_examples=200, deadline=None)
@given(stream=streams(), seed=st.integers(0, 2**32))
@pytest.mark.slow  # over a second: the full suite runs it, the fast lane does not
def test_a_summary_does_not_depend_on_how_the_bytes_were_chunked(stream: bytes, seed: int) -> None:
    def summarise(chunks: list[bytes]) -> dict[str, Any]:
        decoder = StreamDecoder({"type": "gnss"}, {"type": "gnss", "validate": True})
        decoder.rejected = []
        summary = StreamSummary()
        for chunk in chunks:
            summary.add_events(decoder.feed(chunk))
            summary.add_rejected(decoder.rejected)
            decoder.rejected.clear()
        return summary.as_dict(decoder.bytes_skipped)

    rng = random.Random(seed)
    cuts = (
        sorted(rng.sample(range(1, len(stream)), min(len(stream) - 1, rng.randint(0, 8))))
        if len(stream) > 1
        else []
    )
    chunks = [stream[i:j] for i, j in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    assert summarise(chunks) == summarise([stream])


@pytest.mark.anyio
async def test_on_a_cursor_every_consumed_frame_is_counted() -> None:
    """Frames a framed read decoded but did not return (max_frames) are in the next summary, and
    the cursor ends after what was counted."""
    opener = FakeOpener()
    dev = opener.add("dev")
    stream = b"".join(nmea(SENTENCES[i % 4]) for i in range(40)) + nmea(SENTENCES[0], good=False)
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "dev", "protocol": "nmea0183"}))["connection_id"]
        dev.feed(stream)
        await _settle(c, cid, len(stream))
        first = await call(c, "read", {"connection_id": cid, "max_frames": 3, "timeout_ms": 0})
        assert len(first["frames"]) == 3
        rest = await call(c, "read", {"connection_id": cid, "summary": True, "timeout_ms": 0})
        counts = rest["counts"]
        assert counts["valid"] == 37 and counts["types"]["nmea GPGGA"]["n"] == 9
        # the bad sentence was dropped while the first read decoded ahead: counted there or here
        assert first["frames_dropped"] + counts["bad"] == 1
        assert rest["next_offset"] == len(stream) and rest["cursor"] == "default"
        again = await call(c, "read", {"connection_id": cid, "summary": True, "timeout_ms": 0})
        assert again["counts"]["frames"] == 0 and again["from_offset"] == len(stream)


@pytest.mark.anyio
async def test_a_summary_is_bounded_whatever_the_stream() -> None:
    """200 different sentence types and 2,000 bad frames: a few KB, the counts still exact."""
    opener = FakeOpener()
    dev = opener.add("dev")
    stream = b"".join(nmea(f"GP{i:03d},{i},1.5,{i * 2}") for i in range(200)) * 5
    stream += b"".join(nmea(f"GPX{i % 50:02d},1", good=False) for i in range(2000))
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "dev", "protocol": "nmea0183"}))["connection_id"]
        dev.feed(stream)
        await _settle(c, cid, len(stream))
        r = await c.call_tool(
            "read", {"connection_id": cid, "summary": True, "from": 0, "to": len(stream), "timeout_ms": 0}
        )
        counts = r.structured_content["counts"]
        assert (counts["frames"], counts["valid"], counts["bad"]) == (3000, 1000, 2000)
        assert len(counts["types"]) == MAX_TYPES + 1 and "other" in counts["types"]  # the rest, counted
        assert sum(t["n"] for t in counts["types"].values()) == 3000
        assert sum(t["valid"] for t in counts["types"].values()) == 1000
        assert len(json.dumps(r.structured_content)) < 8000 and len(r.content[0].text) < 4000  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_summary_ranges_named_fields_and_refuses_what_does_not_apply() -> None:
    opener = FakeOpener()
    dev = opener.add("dev")
    gga = [
        nmea(f"GPGGA,1235{i:02d},4807.038,N,01131.000,E,1,{8 + i % 3:02d},0.9,{540 + i}.5,M,46.9,M,,")
        for i in range(10)
    ]
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "dev", "protocol": "nmea0183"}))["connection_id"]
        dev.feed(b"".join(gga))
        await _settle(c, cid, sum(map(len, gga)))
        r = await c.call_tool("read", {"connection_id": cid, "summary": True, "from": 0, "timeout_ms": 0})
        t = r.structured_content["counts"]["types"]["nmea GPGGA"]
        assert t["ranges"]["alt"] == {"min": 540.5, "max": 549.5, "mean": 545.0, "last": 549.5}
        assert t["ranges"]["sv"]["min"] == 8 and t["ranges"]["sv"]["max"] == 10
        assert t["last"]["fix"] == "gps" and t["last"]["lat"] == 48.1173
        text = r.content[0].text  # type: ignore[union-attr]
        assert "nmea GPGGA 10" in text and "alt 540.5..549.5" in text
        for bad in ({"to": 5}, {"fields": ["alt"]}):
            e = await error(c, "read", {"connection_id": cid, **bad})
            assert e["code"] == "invalid_argument" and "summary" in e["message"]
        e = await error(c, "read", {"connection_id": cid, "summary": True, "match": "x"})
        assert "match" in e["message"]
        e = await error(c, "read", {"connection_id": cid, "summary": True, "from": 10, "to": 5})
        assert "to is 5" in e["message"]


@pytest.mark.anyio
async def test_a_summary_times_its_window_and_gives_the_rate() -> None:
    """first_t/last_t are the arrival times of the window's first and last frame (from the ring)."""
    opener = FakeOpener()
    dev = opener.add("dev")
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "dev", "protocol": "nmea0183"}))["connection_id"]
        first, second = nmea(SENTENCES[0]) * 5, nmea(SENTENCES[1]) * 5
        dev.feed(first)
        await _settle(c, cid, len(first))
        await anyio.sleep(0.05)  # a gap in the stream, so the window has a duration to measure
        dev.feed(second)
        await _settle(c, cid, len(first) + len(second))
        counts = (await call(c, "read", {"connection_id": cid, "summary": True, "timeout_ms": 0}))["counts"]
        assert counts["last_t"] > counts["first_t"]
        assert abs(counts["seconds"] - (counts["last_t"] - counts["first_t"])) <= 0.002  # each rounded to ms
        assert counts["frames"] == 10 and counts["rate_per_s"] > 0
        total = len(first) + len(second)
        assert counts["first_offset"] == 0 and total - 2 <= counts["last_offset"] < total


def test_named_fields_pick_list_elements_and_decoded_message_fields() -> None:
    from serial_mcp.core.decode import DecodedFrame
    from serial_mcp.core.parsers.modbus_rtu import ModbusRtuParser

    parser = ModbusRtuParser()
    summary = StreamSummary(["registers[1]", "address"])
    for i, value in enumerate((100, 250, 175)):
        body = bytes([7, 3, 4, 0, 1]) + value.to_bytes(2, "big")
        summary.add_events([DecodedFrame(body, i * 10, i * 10 + 7, True, parser.parse(body).fields)])
    t = summary.as_dict()["types"]["modbus fc03"]
    assert t["n"] == 3 and t["ranges"]["registers[1]"] == {"min": 100, "max": 250, "mean": 175.0, "last": 175}
    assert t["ranges"]["address"]["last"] == 7 and t["last"]["registers"] == [1, 175]
