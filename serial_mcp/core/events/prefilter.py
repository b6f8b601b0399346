"""The detector's prefilter: where the next trigger literal (or a user's boot pattern) lies in received bytes.

Every byte the detector is fed passes through here, so this is the detector's cost on a stream that matches
nothing. The trigger literals are found by Aho-Corasick (``ahocorasick_rs``, Rust's ``aho-corasick`` crate:
for up to 64 literals its SIMD "Teddy" prefilter reads ~3 GB/s here, about ten times one RE2 DFA pass over
the same alternation, and it releases the GIL). A user's boot patterns are regexes: they are searched by RE2
on their own and the two answers merged, so a user's pattern costs what that pattern costs and no more.
Without ``ahocorasick_rs`` (an install without its dependencies) the literals are one RE2 alternation, as
before: the same answers, slower.

Both answer RE2's leftmost-first question: the match starting leftmost at or after a position, and among
those starting there the literal listed first (the built-in literals before a user's patterns).

:meth:`Prefilter.hits` answers a run of such questions over one region with increasing positions, as the
detector asks them walking a chunk line by line: Aho-Corasick lists the region's non-overlapping matches in
one pass, and each question takes the first listed match at or after its position — the same match a fresh
search from there finds, unless the listed match before it straddles the position (then it searches afresh).
The regex part remembers its last answer, which holds for every later position up to that answer's start.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from serial_mcp.core.events.block import escape
from serial_mcp.core.match import compile_re2

Span = tuple[int, int]  # (start, end) of a match in the searched bytes

_ac: ModuleType | None
try:
    import ahocorasick_rs

    _ac = ahocorasick_rs
except ImportError:  # pragma: no cover - the fallback is exercised by setting _ac to None in tests
    _ac = None


@functools.lru_cache(maxsize=8)
def _automaton(literals: tuple[bytes, ...]) -> Any:
    """The Aho-Corasick automaton of ``literals``, built once and shared by every detector (it is immutable
    and its searches are thread-safe): one costs ~1.2 ms and ~440 KiB to build, once per process instead
    of once per open connection."""
    assert _ac is not None
    return _ac.BytesAhoCorasick(literals, matchkind=_ac.MatchKind.LeftmostFirst)


def fast_literals_available() -> bool:
    """Whether the literals are searched by Aho-Corasick (``ahocorasick_rs`` is installed)."""
    return _ac is not None


class Prefilter:
    """The leftmost trigger literal or user pattern in bytes (see the module's docstring).

    ``literals`` are byte strings, ``patterns`` RE2 regexes over the raw bytes (``(?m)``: ``^``/``$`` at
    line ends); ``patterns`` are compiled by :func:`~serial_mcp.core.match.compile_re2` (its size budget
    and errors, named ``field``). ``fast=False`` searches the literals by RE2 too (the fallback, forced)."""

    def __init__(
        self,
        literals: Sequence[bytes],
        patterns: Sequence[bytes] = (),
        *,
        field: str = "boot_patterns",
        fast: bool | None = None,
    ) -> None:
        self.literals = tuple(literals)
        use_ac = (_ac is not None) if fast is None else (fast and _ac is not None)
        self._ac: Any = None
        self._literal_re: Any = None
        if self.literals and use_ac:
            self._ac = _automaton(self.literals)
        elif self.literals:
            self._literal_re = compile_re2(b"|".join(map(escape, self.literals)), field, multiline=True)
        self._pattern_re: Any = (
            compile_re2(b"|".join(b"(?:" + p + b")" for p in patterns), field, multiline=True)
            if patterns
            else None
        )

    @property
    def fast(self) -> bool:
        """Whether the literals are searched by Aho-Corasick."""
        return self._ac is not None

    def search(self, data: bytes, pos: int = 0, endpos: int | None = None) -> Span | None:
        """The leftmost match in ``data[pos:endpos]`` as ``(start, end)`` offsets into ``data``, or None."""
        ac = self._ac
        if ac is not None and self._pattern_re is None:  # one line's question: no Hits to build
            found = ac.find_matches_as_indexes(
                data if pos == 0 and endpos is None else memoryview(data)[pos:endpos]
            )
            return (found[0][1] + pos, found[0][2] + pos) if found else None
        return self.hits(data, pos, len(data) if endpos is None else endpos).first(pos)

    def found(self, data: bytes) -> bool:
        """Whether ``data`` holds a trigger or a user pattern's match at all."""
        if self._ac is not None and self._ac.find_matches_as_indexes(data):
            return True
        if self._literal_re is not None and self._literal_re.search(data) is not None:
            return True
        return self._pattern_re is not None and self._pattern_re.search(data) is not None

    def hits(self, data: bytes, lo: int, hi: int) -> Hits:
        """Answers for ``data[lo:hi]`` to questions asked at increasing positions (see :class:`Hits`)."""
        return Hits(self, data, lo, hi)


class Hits:
    """The leftmost match at or after a position in one region, for positions that only grow."""

    __slots__ = ("_data", "_hi", "_k", "_listed", "_lo", "_pf", "_regex_at", "_regex_from")

    def __init__(self, prefilter: Prefilter, data: bytes, lo: int, hi: int) -> None:
        self._pf = prefilter
        self._data = data
        self._lo = lo
        self._hi = hi
        self._listed: list[tuple[int, int, int]] | None = None  # Aho-Corasick's matches, relative to _lo
        self._k = 0  # the first listed match not yet behind the questions
        self._regex_from = hi + 1  # the regex part's last answer holds from here ...
        self._regex_at: Span | None = None  # ... up to its start (None: to the region's end)

    def first(self, pos: int) -> Span | None:
        """The leftmost match in ``data[pos:hi]``; ``pos`` at least the previous question's."""
        if pos >= self._hi:
            return None
        pf = self._pf
        lit = self._literal(pos) if pf._ac is not None else self._regex(pf._literal_re, pos)
        if pf._pattern_re is None:
            return lit
        user = self._user(pos)
        if user is None:
            return lit
        if lit is None or user[0] < lit[0]:
            return user  # at the same start the literal wins: listed first, as in one alternation
        return lit

    def _literal(self, pos: int) -> Span | None:
        listed = self._listed
        if listed is None:
            listed = self._list(pos)
        k = self._k
        base = self._lo
        while k < len(listed) and listed[k][1] + base < pos:
            k += 1
        if k and listed[k - 1][2] + base > pos:  # the match before straddles pos: one may start inside it
            listed = self._list(pos)
            k, base = 0, pos
        self._k = k
        if k == len(listed):
            return None
        _, s, e = listed[k]
        return s + base, e + base

    def _list(self, pos: int) -> list[tuple[int, int, int]]:
        view = memoryview(self._data)[pos : self._hi]
        self._listed = self._pf._ac.find_matches_as_indexes(view)
        self._lo = pos
        self._k = 0
        return self._listed

    def _regex(self, regex: Any, pos: int) -> Span | None:
        if regex is None:
            return None
        m = regex.search(self._data, pos, self._hi)
        return None if m is None else (m.start(), m.end())

    def _user(self, pos: int) -> Span | None:
        at = self._regex_at
        if self._regex_from <= pos and (at is None or pos <= at[0]):
            return at  # no match starts between the last question and its answer
        found = self._regex(self._pf._pattern_re, pos)
        self._regex_from, self._regex_at = pos, found
        return found
