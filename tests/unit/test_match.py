"""Matcher: literal/regex/glob, and matches found whatever the chunking."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from serial_mcp.core.match import Matcher
from serial_mcp.errors import InvalidArgument


def feed_in_chunks(m: Matcher, stream: bytes, cuts: list[int]) -> tuple[int, int] | None:
    """Simulate the read loop: the window grows chunk by chunk and is searched incrementally."""
    window = b""
    searched = 0
    points = sorted({c % (len(stream) + 1) for c in cuts} | {len(stream)})
    for p in points:
        window = stream[:p]
        span = m.find(window, searched)
        searched = len(window)
        if span is not None:
            return span.start, span.end
    return None


@pytest.mark.parametrize(
    ("spec", "stream", "span"),
    [
        ("OK", b"AT\r\r\nOK\r\n", (5, 7)),
        ({"pattern": "O[KR]+", "mode": "regex"}, b"xxERROR", (5, 7)),
        ({"pattern": "OK", "mode": "regex"}, b"xxERROR", None),
        ({"pattern": r"\+CSQ: (\d+)", "mode": "regex"}, b"\r\n+CSQ: 23,99\r\n", (2, 10)),
        ({"pattern": "Hit * autoboot", "mode": "glob"}, b"U-Boot\nHit any key to stop autoboot: 3", (7, 35)),
        ({"pattern": "login?", "mode": "glob"}, b"router login: ", (7, 13)),
        ({"pattern": "0d0a", "pattern_encoding": "hex"}, b"ab\r\n", (2, 4)),
        ({"pattern": "^# ", "mode": "regex"}, b"boot\n# ", (5, 7)),
    ],
)
def test_modes(spec: object, stream: bytes, span: tuple[int, int] | None) -> None:
    found = Matcher.from_spec(spec).find(stream)
    assert (None if found is None else (found.start, found.end)) == span


def test_glob_star_does_not_cross_lines() -> None:
    m = Matcher.from_spec({"pattern": "a*b", "mode": "glob"})
    assert m.find(b"a\nb") is None
    assert m.find(b"a--b") is not None


@pytest.mark.parametrize(
    "spec",
    [
        {"pattern": ""},
        {"pattern": "(", "mode": "regex"},
        {"pattern": "x", "mode": "fuzzy"},
        {"pattern": "x", "modee": "regex"},
        {"mode": "regex"},
        {"pattern": "zz", "pattern_encoding": "hex"},
        42,
    ],
)
def test_bad_specs_are_clear_errors(spec: object) -> None:
    with pytest.raises(InvalidArgument) as exc:
        Matcher.from_spec(spec)
    assert exc.value.code == "invalid_argument"
    assert exc.value.message


@settings(max_examples=300, deadline=None)
@given(
    prefix=st.binary(max_size=200),
    needle=st.binary(min_size=1, max_size=12),
    suffix=st.binary(max_size=50),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=20),
)
@pytest.mark.slow
def test_literal_any_chunking_same_match(
    prefix: bytes, needle: bytes, suffix: bytes, cuts: list[int]
) -> None:
    stream = prefix + needle + suffix
    m = Matcher(needle, "literal")
    whole = m.find(stream)
    assert whole is not None
    assert feed_in_chunks(m, stream, cuts) == (whole.start, whole.end)
    assert whole.start <= len(prefix)


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet="abcOK\r\n+:0123456789 ", max_size=120),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=15),
)
@pytest.mark.slow
def test_regex_any_chunking_same_match(text: str, cuts: list[int]) -> None:
    stream = text.encode()
    m = Matcher.from_spec({"pattern": r"OK\r\n|\+\d+:", "mode": "regex"})
    whole = m.find(stream)
    chunked = feed_in_chunks(m, stream, cuts)
    # A regex may match earlier in a shorter window only if the shorter window's match is also
    # the first match in the whole stream; so the first hit is the same.
    assert chunked == (None if whole is None else (whole.start, whole.end))


def test_the_same_spec_gives_the_same_compiled_matcher_and_a_bad_one_raises_every_time() -> None:
    """An agent's ``OK`` or prompt is compiled once, not once per call (matchers are immutable)."""
    a = Matcher.from_spec("OK")
    assert Matcher.from_spec("OK") is a
    spec = {"pattern": r"\$ $", "mode": "regex"}
    r = Matcher.from_spec(spec)
    assert Matcher.from_spec(dict(reversed(list(spec.items())))) is r
    assert r.find(b"root$ ") is not None and a.find(b"\r\nOK") is not None
    assert Matcher.from_spec({"pattern": "x", "ansi": "ignore"}) is not Matcher.from_spec("x")
    for _ in range(2):
        with pytest.raises(InvalidArgument):
            Matcher.from_spec({"pattern": "(", "mode": "regex"})
