"""A big result is serialized beside the event loop, not on it (issue 28 leftover).

A framed read of 4 MiB (tens of thousands of frames) makes a result of several MB: turning it into
its JSON-RPC answer took 0.6–0.9 s on the loop, and every other session's ping waited that long.
"""

from __future__ import annotations

import base64

from tests.liveness import StdioServer, structured

# 419 bytes: 10,000 frames (max_frames' most) hold 4 MiB; mostly text, a JSON string each
LINE = b"seq=00000000 " + b"sensor=1234.5678 state=ok " * 15 + b"\n"


def _lines(total: int) -> bytes:
    out = bytearray()
    seq = 0
    while len(out) + len(LINE) <= total:
        out += LINE.replace(b"00000000", b"%08d" % seq)
        seq += 1
    return bytes(out)


def test_a_four_mib_framed_read_leaves_the_loop_live() -> None:
    data = _lines(10_000 * len(LINE))
    with StdioServer() as srv:
        cid = srv.call("open", {"port": "loop://", "rx_buffer_size": 8 * 1024 * 1024})["connection_id"]
        for i in range(0, len(data), 1 << 20):  # in 1 MiB writes: each request stays small
            chunk = data[i : i + (1 << 20)]
            args = {"connection_id": cid, "data": base64.b64encode(chunk).decode(), "encoding": "base64"}
            assert srv.call("write", args)["bytes_written"] == len(chunk)
        result = srv.assert_live(
            "read",
            {
                "connection_id": cid,
                "rx_framing": {"type": "line"},
                "max_bytes": 4 * 1024 * 1024,
                "max_frames": 10_000,
                "timeout_ms": 5000,
            },
        )
        out = structured(result)
        frames = out["frames"]
        assert len(frames) == 10_000
        assert frames[0]["data"].startswith("seq=00000000 sensor=")
        assert frames[-1]["data"].startswith("seq=00009999 sensor=")
