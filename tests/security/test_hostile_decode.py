"""Hostile decoding (issue 28, items 1 and 2): no frame, however it lies, and no stream, however it
is crafted, holds the event loop or grows a read's result past its bounds.

* A UBX frame whose repeat count claims more groups than its payload holds (``MON-PATCH`` of 12
  bytes, ``nEntries`` 65535) is flagged, not expanded into 327,677 padded fields; an honest frame
  with more fields than a decoded frame may hold keeps the first ones and says ``truncated``.
* Binary framing over overlapping false candidates (every 5th byte a sync claiming 512 KiB) checks
  a bounded number of bytes per input byte; Modbus RTU does not probe a waiting candidate again
  for every chunk that arrives.
* Each attack, run against a real stdio server, leaves its pings answered within 250 ms
  (``tests/liveness.py``).
"""

from __future__ import annotations

import base64
import json
import random
import struct
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pyubx2 import UBXMessage  # type: ignore[import-untyped]

from serial_mcp import Engine
from serial_mcp.core import checksums
from serial_mcp.core.capture import CaptureEvent
from serial_mcp.core.decode import DecodedFrame, StreamDecoder
from serial_mcp.core.framing import build_decoder, build_encoder
from serial_mcp.core.framing import modbus_rtu as modbus_module
from serial_mcp.core.framing.base import Frame
from serial_mcp.core.parsers import gnss as gnss_parsers
from serial_mcp.core.parsers.gnss import GnssParser, UbxParser
from serial_mcp.view.frames import decode_frames
from tests.liveness import StdioServer, structured

_fletcher = checksums.function("ubx")


def ubx(cls: int, mid: int, payload: bytes) -> bytes:
    body = bytes([cls, mid]) + len(payload).to_bytes(2, "little") + payload
    return b"\xb5\x62" + body + _fletcher(body).to_bytes(2, "little")


#: ``b5 62 0a 27 04 00 00 00 ff ff`` + checksum: MON-PATCH, version 0, nEntries 65535, no entries.
MON_PATCH_LIE = ubx(0x0A, 0x27, b"\x00\x00\xff\xff")
#: NAV-SAT with 255 satellites, all present: 255 × 12 bytes, 26 decoded fields each (6,634 in all).
NAV_SAT_FULL = ubx(0x01, 0x35, struct.pack("<IBBH", 1000, 1, 255, 0) + bytes(range(12)) * 255)

BINARY_SPEC: dict[str, Any] = {
    "type": "binary",
    "sync": "aa",
    "length": {"offset": 1, "size": 4, "endianness": "little"},
    "checksum": {"algorithm": "crc32"},
    "max_length": 600000,
}


def false_candidates(count: int, claimed: int = 512 * 1024) -> bytes:
    """``count`` five-byte runs, each a sync ``aa`` and a length field claiming ``claimed`` bytes."""
    return (b"\xaa" + struct.pack("<I", claimed)) * count


# --- item 1: a UBX frame whose count lies ------------------------------------------------------------


def test_a_repeat_count_the_payload_cannot_hold_is_flagged_not_expanded() -> None:
    parsed = UbxParser().parse(MON_PATCH_LIE)
    assert parsed.checksum_valid is True  # the frame itself is well formed: only its count lies
    fields = parsed.fields
    assert fields["name"] == "MON-PATCH" and fields["length"] == 4
    assert "fields" not in fields  # nothing decoded, nothing padded
    assert "nEntries" in fields["error"] and "65535" in fields["error"], fields
    assert len(json.dumps(fields)) < 500


def test_the_gnss_parser_flags_the_lie_in_a_mixed_stream() -> None:
    decoder = StreamDecoder({"type": "gnss"}, {"type": "gnss"})
    events = decoder.feed(MON_PATCH_LIE * 3 + b"$GPGGA,1*00\r\n")
    frames = [e for e in events if isinstance(e, DecodedFrame)]
    assert [(f.parsed or {}).get("name") for f in frames[:3]] == ["MON-PATCH"] * 3
    assert all("error" in (f.parsed or {}) for f in frames[:3])
    assert sum(len(json.dumps(f.parsed)) for f in frames) < 2000


def test_an_honest_count_still_decodes_every_group() -> None:
    entries = 3
    payload = struct.pack("<HH", 1, entries) + b"".join(
        struct.pack("<IIII", 0x11 * (i + 1), i, 0x2000 + i, 0xDEAD0000 + i) for i in range(entries)
    )
    fields = UbxParser().parse(ubx(0x0A, 0x27, payload)).fields
    assert "error" not in fields and "truncated" not in fields
    assert fields["fields"]["nEntries"] == entries
    assert fields["fields"]["patchAddress_03"] == 0x2002
    assert fields["fields"]["patchData_03"] == 0xDEAD0002


def test_a_decoded_frame_past_the_field_cap_is_truncated_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = UbxParser().parse(NAV_SAT_FULL).fields
    assert "truncated" not in whole and len(whole["fields"]) > 6000
    monkeypatch.setattr(gnss_parsers, "MAX_FIELDS", 100, raising=False)
    cut = UbxParser().parse(NAV_SAT_FULL).fields
    assert cut["truncated"] is True
    assert len(cut["fields"]) == 100
    assert list(cut["fields"].items()) == list(whole["fields"].items())[:100]  # the first ones, as decoded


def test_the_field_cap_bounds_the_decoding_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """A frame past the cap stops being decoded at the cap, not decoded whole and then cut."""
    stored: list[str] = []
    real_setattr = UBXMessage.__setattr__

    def counting(self: object, name: str, value: object) -> None:
        stored.append(name)
        real_setattr(self, name, value)

    monkeypatch.setattr(UBXMessage, "__setattr__", counting)
    monkeypatch.setattr(gnss_parsers, "MAX_FIELDS", 100, raising=False)
    UbxParser().parse(NAV_SAT_FULL)
    public = [name for name in stored if not name.startswith("_")]
    assert 100 <= len(public) <= 130, len(public)


def test_the_capture_view_of_lying_frames_is_small_and_quick() -> None:
    """``serial-mcp view --protocol gnss`` of 1.4 kB of lying MON-PATCH frames took 39 s."""
    events = [CaptureEvent(t=float(i), type="rx", data=MON_PATCH_LIE * 2) for i in range(2)]
    table = decode_frames(events, {"type": "gnss"}, {"type": "gnss"})
    assert len(table) == 4
    assert all(len(text) < 400 for _, text in table.notes)
    assert all(len(json.dumps(parsed)) < 500 for _, _, parsed, _ in table.parsed)


def test_the_capture_view_marks_a_truncated_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gnss_parsers, "MAX_FIELDS", 100, raising=False)
    table = decode_frames(
        [CaptureEvent(t=0.0, type="rx", data=NAV_SAT_FULL)], {"type": "gnss"}, {"type": "gnss"}
    )
    [(_, text)] = table.notes
    assert text.startswith("truncated ") and "name=NAV-SAT" in text, text
    [(_, _, parsed, _)] = table.parsed
    assert parsed["truncated"] is True and len(parsed["fields"]) == 100


def test_rtcm3_frames_obey_the_same_field_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    crc = checksums.function("crc24_lte_a")
    body = bytes([1013 >> 4, ((1013 & 15) << 4) | 0xF]) + b"\xff" * 1021
    head = bytes([0xD3, len(body) >> 8, len(body) & 0xFF]) + body
    frame = head + crc(head).to_bytes(3, "big")
    whole = GnssParser().parse(frame).fields
    assert len(whole["fields"]) > 50 and "truncated" not in whole
    monkeypatch.setattr(gnss_parsers, "MAX_FIELDS", 20, raising=False)
    cut = GnssParser().parse(frame).fields
    assert cut["truncated"] is True and list(cut["fields"]) == list(whole["fields"])[:20]


# --- item 2: bounded scan work ---------------------------------------------------------------------


@pytest.fixture
def checked_bytes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts the bytes every checksum built by binary framing from now on is computed over."""
    count = [0]
    real = checksums.function

    def counting(algorithm: str) -> Callable[[bytes | bytearray], int]:
        fn = real(algorithm)

        def wrapped(data: bytes | bytearray) -> int:
            count[0] += len(data)
            return fn(data)

        return wrapped

    monkeypatch.setattr(checksums, "function", counting)  # binary framing resolves it per layout
    yield count


def feed_all(decoder: Any, data: bytes, chunk: int) -> list[Frame]:
    frames = []
    for i in range(0, len(data), chunk):
        frames += [e for e in decoder.feed(data[i : i + chunk]) if isinstance(e, Frame)]
    return frames + [e for e in decoder.flush() if isinstance(e, Frame)]


def test_binary_scan_checks_a_bounded_number_of_bytes_per_input_byte(checked_bytes: list[int]) -> None:
    spec = dict(BINARY_SPEC, max_length=40000)
    attack = false_candidates(40000, claimed=32 * 1024)  # 200 kB, 40,000 overlapping candidates
    decoder = build_decoder(spec)
    assert feed_all(decoder, attack, 4096) == []
    # every candidate checked whole would be 40,000 × 32 KiB = 1.3 GB of CRC
    assert checked_bytes[0] <= 64 * len(attack), checked_bytes[0]


def test_binary_budget_depends_on_the_bytes_not_their_chunking(checked_bytes: list[int]) -> None:
    good_frames = [build_encoder_frame(bytes([i]) * 300) for i in range(5)]
    stream = b"".join(false_candidates(3000, claimed=20000) + frame for frame in good_frames)
    spec = dict(BINARY_SPEC, max_length=30000)
    results = []
    for chunk in (1, 7, 4096, len(stream)):
        checked_bytes[0] = 0
        frames = feed_all(build_decoder(spec), stream, chunk)
        results.append([(f.start, f.end, f.data, f.checksum_valid) for f in frames])
        assert checked_bytes[0] <= 64 * len(stream)
    assert all(r == results[0] for r in results)
    assert [data for _, _, data, _ in results[0]] == [bytes([i]) * 300 for i in range(5)]


def build_encoder_frame(data: bytes) -> bytes:
    return build_encoder(dict(BINARY_SPEC, max_length=30000)).encode(data)


def test_modbus_rtu_does_not_probe_a_waiting_candidate_again_per_chunk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    crc_calls = [0]
    real = modbus_module._crc

    def counting(data: bytes | bytearray) -> int:
        crc_calls[0] += 1
        return real(data)

    monkeypatch.setattr(modbus_module, "_crc", counting)
    noise = random.Random(28).randbytes(1024)
    whole = feed_all(build_decoder({"type": "modbus_rtu"}), noise, len(noise))
    crc_calls[0] = 0
    trickled = feed_all(build_decoder({"type": "modbus_rtu"}), noise, 1)
    assert [(f.start, f.end) for f in trickled] == [(f.start, f.end) for f in whole]
    # byte by byte, the candidate at the front is the same one for up to 256 feeds: each feed checks
    # only the one new length (fresh candidates ask the end index, no CRC), each frame one CRC more
    assert crc_calls[0] <= len(noise) + 2 * len(trickled), (crc_calls[0], len(trickled))


def test_modbus_rtu_noise_costs_bounded_work_per_byte(monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 28: on noise every byte starts a candidate; an unknown function's used to be probed
    # at each of its 253 lengths (a CRC each, ~80 µs per byte); now one index look-up per start
    crc_calls = [0]
    real = modbus_module._crc

    def counting(data: bytes | bytearray) -> int:
        crc_calls[0] += 1
        return real(data)

    monkeypatch.setattr(modbus_module, "_crc", counting)
    noise = random.Random(29).randbytes(64 * 1024)
    frames = feed_all(build_decoder({"type": "modbus_rtu"}), noise, 4096)
    assert crc_calls[0] <= 2 * len(noise), (crc_calls[0], len(frames))


# --- liveness: the attacks against a real server -------------------------------------------------


def write_b64(srv: StdioServer, cid: str, data: bytes) -> None:
    out = srv.call(
        "write", {"connection_id": cid, "data": base64.b64encode(data).decode(), "encoding": "base64"}
    )
    assert out["bytes_written"] == len(data), out


def open_loop(srv: StdioServer, size: int | None = None) -> str:
    args: dict[str, Any] = {"port": "loop://"}
    if size is not None:
        args["rx_buffer_size"] = size
    cid: str = srv.call("open", args)["connection_id"]
    return cid


def test_lying_mon_patch_frames_leave_the_loop_live() -> None:
    with StdioServer() as srv:
        cid = open_loop(srv)
        write_b64(srv, cid, MON_PATCH_LIE * 3)
        result = srv.assert_live(
            "read", {"connection_id": cid, "protocol": "gnss", "timeout_ms": 1000, "max_frames": 3}
        )
        out = structured(result)
        assert [f["parsed"]["name"] for f in out["frames"]] == ["MON-PATCH"] * 3
        assert all("error" in f["parsed"] for f in out["frames"])
        assert len(json.dumps(out)) < 10_000


def test_overlapping_binary_candidates_leave_the_loop_live() -> None:
    """The reproducer of issue 28.2: pinged 17 s late before."""
    with StdioServer() as srv:
        cid = open_loop(srv, 4 * 1024 * 1024)
        write_b64(srv, cid, false_candidates(240000))
        result = srv.assert_live(
            "read", {"connection_id": cid, "rx_framing": BINARY_SPEC, "timeout_ms": 2000}
        )
        out = structured(result)
        assert out["frames"] == [] and out["stop_reason"] == "timeout"


def test_modbus_rtu_noise_leaves_the_loop_live() -> None:
    noise = random.Random(2).randbytes(256 * 1024)
    with StdioServer() as srv:
        cid = open_loop(srv, 4 * 1024 * 1024)
        write_b64(srv, cid, noise)
        result = srv.assert_live(
            "read",
            {
                "connection_id": cid,
                "rx_framing": {"type": "modbus_rtu"},
                "max_frames": 10000,
                "timeout_ms": 1500,
            },
        )
        out = structured(result)
        assert out["stop_reason"] in ("timeout", "max_frames", "max_bytes"), out["stop_reason"]


def test_dense_honest_ubx_frames_leave_the_loop_live() -> None:
    """Honest frames that are expensive to decode (6,634 fields each, 100 of them behind the read):
    their decoding goes on beside the loop."""
    with StdioServer() as srv:
        cid = open_loop(srv, 4 * 1024 * 1024)
        write_b64(srv, cid, NAV_SAT_FULL * 100)
        result = srv.assert_live("read", {"connection_id": cid, "protocol": "gnss", "timeout_ms": 3000})
        out = structured(result)
        assert out["frames"] and all(f["parsed"]["name"] == "NAV-SAT" for f in out["frames"])


@pytest.mark.anyio
async def test_decoded_fields_count_against_max_bytes() -> None:
    """A NAV-SAT of 3 kB decodes into 6,634 fields (about 120 kB of result): 64 KiB of max_bytes
    holds one such frame, not the 21 its raw bytes would allow."""
    async with Engine() as eng:
        conn = await eng.open("loop://", rx_buffer_size=1 << 20)
        await conn.write(base64.b64encode(NAV_SAT_FULL * 30).decode(), encoding="base64")
        first = await conn.read(protocol="gnss", timeout_ms=2000, max_bytes=65536)
        assert first.stop_reason == "max_bytes" and len(first.frames or []) == 1
        rest = await conn.read(protocol="gnss", timeout_ms=2000, max_bytes=4 << 20, max_frames=29)
        assert len(rest.frames or []) == 29  # the frames decoded past the stop are the next read's
        assert [f.offset for f in (first.frames or []) + (rest.frames or [])] == [
            i * len(NAV_SAT_FULL) for i in range(30)
        ]
