"""The one-line text of a framed read says each frame's kind and checksum verdict, and frames=
parsed|raw gives the cheap forms."""

from __future__ import annotations

import pytest
from mcp import Client

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager

pytestmark = pytest.mark.anyio

GOOD = b"$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47\r\n"
BAD = b"$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*48\r\n"


async def test_text_carries_verdicts_and_frames_view_trims() -> None:
    opener = FakeOpener()
    dev = opener.add("dev")
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await c.call_tool("open", {"port": "dev"})).structured_content["connection_id"]
        dev.feed(GOOD + BAD + GOOD)
        args = {"connection_id": cid, "from": 0, "rx_framing": {"type": "line"}, "rx_parser": {"type": "nmea"}, "max_frames": 3, "timeout_ms": 2000}
        r = await c.call_tool("read", args)
        text = r.content[0].text  # type: ignore[union-attr]
        assert text.count(" ok:") == 2 and text.count(" BAD checksum (computed 47, received 48):") == 1, text
        raw = await c.call_tool("read", {**args, "frames": "raw"})
        assert all("parsed" not in f for f in raw.structured_content["frames"])  # lean: null fields left out
        parsed = await c.call_tool("read", {**args, "frames": "parsed"})
        frames = parsed.structured_content["frames"]
        assert all(f["data"] == "" and f["parsed"] for f in frames)
        import json

        size = {k: len(json.dumps(v.structured_content)) for k, v in (("both", r), ("raw", raw), ("parsed", parsed))}
        assert size["raw"] < size["both"] and size["parsed"] < size["both"], size
