"""The request guard's fast path (all-ASCII, shallow params) never lets through what the full check
refuses: a lone surrogate anywhere, or nesting at the limit."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from serial_mcp.mcp import argument_guard
from serial_mcp.mcp.argument_guard import MAX_DEPTH, _plainly_safe, find_unsafe

json_text = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0xFFFF), max_size=8)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | json_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(json_text, inner, max_size=3),
    max_leaves=20,
)


def nested(depth: int, leaf: Any = "x") -> Any:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


@settings(max_examples=400, deadline=None)
@given(json_values)
@pytest.mark.slow
def test_the_fast_path_only_passes_what_the_full_check_passes(value: Any) -> None:
    if _plainly_safe(value):
        assert find_unsafe(value, "{path}") is None


def test_nesting_at_the_limit_and_surrogates_go_to_the_full_check() -> None:
    for depth in range(MAX_DEPTH - 3, MAX_DEPTH + 4):
        args = nested(depth)
        params = {"name": "write", "arguments": args}
        expected = find_unsafe(args, "a{path}") or find_unsafe({"name": "write"}, "p{path}")
        got = argument_guard.problem_in("tools/call", params)
        assert (got is None) == (expected is None), depth
    assert argument_guard.problem_in("tools/call", {"name": "write", "arguments": {"data": "a\ud800"}})
    assert argument_guard.problem_in("tools/call", {"name": "write", "arguments": {"\udfff": 1}})
    assert argument_guard.problem_in("tools/call", {"name": "write", "arguments": {"data": "é ok"}}) is None
