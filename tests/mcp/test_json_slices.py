"""A big reply made in slices is the same text the SDK's one-call encoding gives (json_slices)."""

from __future__ import annotations

import json

import pytest
from mcp_types import JSONRPCResponse

from serial_mcp.mcp import json_slices


def _reply(n: int, rid: int | str = 7) -> JSONRPCResponse:
    frames = [
        {"index": i, "data": "é€𝄞\"\\\x01\u2028" * (i % 5), "t": 1e17 + i, "f": float("inf"), "nan": float("nan"),
         "n": None, "ok": i % 2 == 0, "big": 2**70, "parsed": {"fields": list(range(i % 7))}}
        for i in range(n)
    ]  # fmt: skip
    result = {
        "content": [{"type": "text", "text": "; ".join(str(f["data"]) for f in frames)}],
        "structuredContent": {"frames": frames, "next_offset": n, "empty": [], "nested": {"more": frames[:3]}},
        "isError": False,
    }
    return JSONRPCResponse(jsonrpc="2.0", id=rid, result=result)


@pytest.mark.parametrize("n", [0, 5, json_slices.BIG_ITEMS + 1, 3 * json_slices.SLICE_ITEMS + 17, 5000])
@pytest.mark.parametrize("rid", [7, 'a"b\\c'])
def test_pieces_make_exactly_the_sdks_text(n: int, rid: int | str) -> None:
    message = _reply(n, rid)
    whole = message.model_dump_json(by_alias=True, exclude_unset=True)
    pieces = list(json_slices.response_pieces(message))
    assert "".join(pieces) == whole
    json.loads(whole)  # and it is JSON (non-finite floats as null)


def test_only_a_reply_with_a_long_list_is_big_and_its_pieces_are_bounded() -> None:
    assert not json_slices.is_big(_reply(json_slices.BIG_ITEMS).result)
    big = _reply(5000)
    assert json_slices.is_big(big.result)
    pieces = list(json_slices.response_pieces(big))
    assert len(pieces) >= 5000 // json_slices.SLICE_ITEMS
    longest_frames = max(p.count('"index":') for p in pieces)
    assert longest_frames <= json_slices.SLICE_ITEMS  # no piece encodes more than a slice of frames
