"""The JSON text of a big reply, made in slices so the event loop gets a turn between them.

A framed read of 4 MiB is a reply of about 9 MB (10,000 frames, and its text block). Encoded in one
``model_dump_json`` call it held the loop for 0.15–0.3 s, and every other session's ping waited.
``response_pieces`` gives the same text (pydantic's own serializer, ``pydantic_core.to_json``, on
each piece) as pieces of bounded work: the dicts on the way to a long list are written key by key,
a long list ``SLICE_ITEMS`` items at a time; the writer yields to the loop after each piece.
Only replies that hold a list longer than ``BIG_ITEMS`` take this path (``is_big``); the rest are
encoded in one call, as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from mcp_types import JSONRPCResponse
from pydantic_core import to_json

__all__ = ["BIG_ITEMS", "SLICE_ITEMS", "is_big", "response_pieces"]

SLICE_ITEMS: Final = 200  # list items encoded in one call (a frame of a read: ~1 kB of JSON)
BIG_ITEMS: Final = 1000  # a reply with a list this long is encoded in slices
_DEPTH: Final = 8  # how deep the dicts on the way to a long list are looked into


def _encode(value: Any) -> str:
    # As BaseModel.model_dump_json encodes a dict[str, Any] field (non-finite floats as null).
    return to_json(value, inf_nan_mode="null").decode()


def is_big(value: Any, depth: int = _DEPTH) -> bool:
    """Does ``value`` hold, through dicts only, a list longer than BIG_ITEMS? (Cheap: it looks at
    the dicts' values and the lists' lengths, not into the lists.)"""
    if isinstance(value, list):
        return len(value) > BIG_ITEMS
    if isinstance(value, dict) and depth > 0:
        for v in value.values():  # a loop, not any(generator): this runs on every reply
            if isinstance(v, list):
                if len(v) > BIG_ITEMS:
                    return True
            elif isinstance(v, dict) and is_big(v, depth - 1):
                return True
    return False


def pieces(value: Any, depth: int = _DEPTH) -> Iterator[str]:
    """The JSON text of ``value`` (as ``to_json`` gives it), in pieces of bounded work."""
    if isinstance(value, dict) and depth > 0 and is_big(value, depth):
        yield "{"
        for i, (key, item) in enumerate(value.items()):
            yield ("," if i else "") + _encode(key) + ":"
            yield from pieces(item, depth - 1)
        yield "}"
    elif isinstance(value, list) and len(value) > SLICE_ITEMS:
        yield "["
        for start in range(0, len(value), SLICE_ITEMS):
            text = _encode(value[start : start + SLICE_ITEMS])
            yield ("," if start else "") + text[1:-1]
        yield "]"
    else:
        yield _encode(value)


def response_pieces(message: JSONRPCResponse) -> Iterator[str]:
    """``message.model_dump_json(by_alias=True, exclude_unset=True)``, in pieces."""
    yield '{"jsonrpc":' + _encode(message.jsonrpc) + ',"id":' + _encode(message.id) + ',"result":'
    yield from pieces(message.result)
    yield "}"
