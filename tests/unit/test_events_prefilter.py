"""The event detector's prefilter (serial_mcp.core.events.prefilter): Aho-Corasick answers RE2's question.

Every question — "the leftmost match at or after this position" — gets the match a leftmost-first
alternation of the literals (then a user's patterns) gives, whether it is asked once (``search``) or as one of
a run of growing positions over a region (``hits``: one Aho-Corasick pass answers them all). The oracle is
Python's ``re`` (leftmost-first, as RE2), and the RE2 fallback must agree with both. Then the detector built on
either gives the same events on every real stream, and the default build is the Aho-Corasick one (the
dependency is installed: a silent fall back to the slow path would be a regression).
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from serial_mcp.core.events import EventDetector, prefilter
from serial_mcp.core.events.prefilter import Prefilter, fast_literals_available

DATA = Path(__file__).resolve().parents[1] / "data"
STREAMS = [*sorted((DATA / "crashes").glob("*.txt")), DATA / "bootlogs/esp32/esp32-mdf-boot.txt"]

TRIGGERS = list(EventDetector()._by_trigger)  # the real table's literals, in table order
# literals that overlap, nest and share prefixes: where a listed match can straddle a later question
OVERLAPPING = [b"abcd", b"bc", b"b", b"cd e", b"U-Boot ", b"U-Boot SPL", b"-Boot", b"***** ", b"** "]
USER = [rb"ab+c", rb"^my board v\d+", rb"Boot\b"]  # a user's boot patterns: RE2 syntax Python's re shares


def oracle(
    literals: list[bytes], patterns: list[bytes], data: bytes, pos: int, hi: int
) -> tuple[int, int] | None:
    alternatives = [re.escape(x) for x in literals] + [b"(?:" + p + b")" for p in patterns]
    m = re.compile(b"|".join(alternatives), re.MULTILINE).search(data, pos, hi)
    return None if m is None else (m.start(), m.end())


FRAGMENTS = st.sampled_from(
    [*TRIGGERS, *OVERLAPPING, b"abbbc", b"my board v12 up", b"x", b"Bo", b"ot", b" ", b"\r\n", b"\n", b"abc"]
)


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(FRAGMENTS, max_size=40),
    steps=st.lists(st.integers(min_value=0, max_value=12), max_size=30),
    which=st.sampled_from(["real", "overlapping", "both"]),
    user=st.booleans(),
)
def test_every_question_gets_the_leftmost_first_match(
    parts: list[bytes], steps: list[int], which: str, user: bool
) -> None:
    literals = {"real": TRIGGERS, "overlapping": OVERLAPPING, "both": TRIGGERS + OVERLAPPING}[which]
    patterns = USER if user else []
    data = b"".join(parts)
    lo, hi = min(3, len(data)), len(data)
    fast, slow = Prefilter(literals, patterns), Prefilter(literals, patterns, fast=False)
    assert fast.fast and not slow.fast
    runs = (fast.hits(data, lo, hi), slow.hits(data, lo, hi))
    pos = lo
    for step in [0, *steps]:
        pos += step
        if pos > hi:
            break
        want = oracle(literals, patterns, data, pos, hi)
        for pf, run in zip((fast, slow), runs, strict=True):
            assert run.first(pos) == want, (pf.fast, pos)
            assert pf.search(data, pos, hi) == want, (pf.fast, pos)
            assert pf.found(data[pos:hi]) == (
                oracle(literals, patterns, data[pos:hi], 0, hi - pos) is not None
            )


def test_a_question_inside_a_listed_match_finds_the_match_starting_there() -> None:
    pf = Prefilter([b"abcd", b"bc"])
    data = b"xabcdx abcd"
    hits = pf.hits(data, 0, len(data))
    assert hits.first(0) == (1, 5)  # the pass lists abcd at 1 ...
    assert hits.first(2) == (2, 4)  # ... and a question at 2 gets bc, which that list does not hold
    assert hits.first(5) == (7, 11)


def test_at_the_same_start_a_literal_wins_over_a_users_pattern_as_in_one_alternation() -> None:
    data = b"-- abcd --"
    for pf in (Prefilter([b"abcd"], [rb"ab+c"]), Prefilter([b"abcd"], [rb"ab+c"], fast=False)):
        assert pf.search(data) == (3, 7)
    assert Prefilter([b"bcd"], [rb"ab+c"]).search(data) == (3, 6)  # the leftmost start wins first


def test_the_default_detector_uses_aho_corasick_one_automaton_for_all() -> None:
    assert fast_literals_available()  # ahocorasick-rs is a dependency (pyproject): CI has it
    assert EventDetector()._trigger.fast
    user = EventDetector(boot_patterns=[rb"my board v\d+ up"])
    assert user._trigger.fast  # a user's pattern is searched by RE2 beside the literals, not instead
    # built once per process (~1.2 ms and ~440 KiB each), not once per open connection
    assert EventDetector()._trigger._ac is EventDetector(boot_patterns=[rb"x\d"])._trigger._ac


def test_the_shared_automaton_answers_threads_searching_at_once() -> None:
    pf = Prefilter(TRIGGERS)
    noise = b"$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47\r\n" * 2000
    cases = [(noise + t + noise, len(noise), len(noise) + len(t)) for t in TRIGGERS[:8]]
    wrong: list[int] = []

    def search(k: int) -> None:
        data, at, to = cases[k]
        for _ in range(50):
            if pf.search(data) != (at, to) or pf.found(noise):
                wrong.append(k)

    threads = [threading.Thread(target=search, args=(k,)) for k in range(len(cases))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not wrong


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.name)
@pytest.mark.parametrize("boot_patterns", [[], [rb"\x00never a boot\x00"]], ids=["built-in", "user"])
def test_the_re2_fallback_finds_the_same_events(
    path: Path, boot_patterns: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = path.read_bytes()
    fast = EventDetector(boot_patterns=boot_patterns)
    monkeypatch.setattr(prefilter, "_ac", None)  # an install without ahocorasick-rs
    slow = EventDetector(boot_patterns=boot_patterns)
    assert fast._trigger.fast and not slow._trigger.fast
    got = []
    for detector in (fast, slow):
        events = []
        for i in range(0, len(data), 4093):
            events += detector.feed(data[i : i + 4093], i, 0.0)
        got.append(events + detector.flush())
    assert got[0] == got[1]
    assert got[0]  # every stream here has events
    assert fast.counters() == slow.counters()
