"""Issue 41.1 (read side): match, from, screen and summary fields are typed once, in
``engine/option_types.py``; a value their type refuses is said in the contract's own words."""

from __future__ import annotations

from typing import Any

import pytest

from serial_mcp.engine.option_types import FromEvent, MatchSpec, ScreenSize
from serial_mcp.engine.options import ReadOptions, TransactOptions, build
from serial_mcp.errors import InvalidArgument


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"screen": {"cols": "40"}}, "screen must be"),
        ({"screen": {"cols": 40, "colour": 1}}, "screen must be"),
        ({"from_": True}, "from True is not valid"),
        ({"from_": {"event": 1, "seq": 2}}, "is not valid; use 'cursor'"),
        ({"from_": 1.5}, "from 1.5 is not valid"),
        ({"match": {"pattern": "OK", "mode": "fuzzy"}}, "match.mode 'fuzzy' is not known"),
        ({"match": {"pattern": "OK", "patern": "x"}}, "unknown key 'patern'"),
        ({"match": 3}, "match must be an object"),
        ({"summary": True, "fields": ["a", 3]}, "fields: give at most 8"),
    ],
)
def test_a_refused_read_option_says_what_the_contract_says(given: dict[str, Any], said: str) -> None:
    with pytest.raises(InvalidArgument, match=said) as caught:
        build(ReadOptions, "read", **given)
    assert "arguments rejected" not in caught.value.message  # not pydantic's report


def test_the_typed_read_options_keep_what_was_given() -> None:
    opts = build(ReadOptions, "read", from_={"event": 2}, screen={"cols": 100}, match={"pattern": "OK"})
    assert opts.from_ == {"event": 2} and opts.screen == {"cols": 100} and opts.match == {"pattern": "OK"}
    assert build(TransactOptions, "transact", "AT\r", match="OK").match == "OK"
    assert build(ReadOptions, "read", from_="12").from_ == "12"  # an offset as digits, as before
    assert set(MatchSpec.__annotations__) == {"pattern", "mode", "pattern_encoding", "ansi"}
    assert set(ScreenSize.__annotations__) == {"cols", "rows"} and set(FromEvent.__annotations__) == {"event"}
