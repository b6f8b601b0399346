"""Pattern matching over a growing RX window: literal, regex or glob, found across chunk splits.

Regex and glob patterns run on Google RE2, whose search time is linear in the text whatever the
pattern (no catastrophic backtracking): ``(a+)+$`` or the glob ``*a*a*a*a*a*b`` cost the same as
``OK``. RE2 has no backreferences or lookaround; such a pattern is a clear ``invalid_argument``, as
is one over the size budget (``MAX_PATTERN_BYTES`` source bytes, ``MAX_PROGRAM_SIZE`` compiled
instructions — the second bounds the per-byte cost when RE2 has to fall back from its DFA).

A read searches the bytes it has gathered so far each time more arrive, resuming near where it
stopped so a flood is not rescanned from the start: literal search keeps ``len(pattern) - 1`` bytes
of overlap; regex/glob search keeps ``reach - 1`` bytes, where ``reach`` is the longest match the
pattern can make (its length when it has no ``*``, ``+`` or ``{``) or ``REGEX_LOOKBACK`` otherwise.
So a match is found whatever the chunking, provided it is at most ``REGEX_LOOKBACK`` bytes long.
Bytes are matched as bytes (RE2's Latin-1 mode), ``^``/``$`` at line ends (multiline).
"""

from __future__ import annotations

import re
from typing import Any, Final, Literal, NamedTuple

import re2

from serial_mcp import messages
from serial_mcp.core.encoding import decode_input
from serial_mcp.core.unknown_keys import reject_unknown_keys
from serial_mcp.errors import InvalidArgument

MatchMode = Literal["literal", "regex", "glob"]
MATCH_MODES: tuple[MatchMode, ...] = ("literal", "regex", "glob")
MATCH_KEYS = ("pattern", "mode", "pattern_encoding", "ansi")

MAX_PATTERN_BYTES = 4096
MAX_PROGRAM_SIZE = 2000  # RE2 instructions; NFA fallback costs ~8 ns per byte per instruction
RE2_MAX_MEM = 8 << 20  # RE2's own budget for the compiled program and its DFA cache
REGEX_LOOKBACK = 64 * 1024  # longest regex/glob match found across chunk boundaries
_UNBOUNDED = frozenset(b"*+{")


class Span(NamedTuple):
    """Where a match sits in the searched window: ``window[start:end]``."""

    start: int
    end: int


class PatternSyntaxError(ValueError):
    """RE2 could not compile a pattern; ``detail`` is RE2's reason."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def compile_re2(source: bytes | str, field: str, *, as_bytes: bool = True, multiline: bool = False) -> Any:
    """Compile a user pattern on RE2 within the size budget.

    ``as_bytes`` matches byte strings byte by byte (Latin-1); otherwise ``str`` text as UTF-8.
    ``multiline`` makes ``^``/``$`` match at line ends (Python's ``re.MULTILINE``).
    Raises ``InvalidArgument`` when over budget, ``PatternSyntaxError`` when RE2 rejects it.
    """
    size = len(source if isinstance(source, bytes) else source.encode("utf-8", "surrogatepass"))
    if size > MAX_PATTERN_BYTES:
        raise InvalidArgument(
            messages.PATTERN_TOO_LONG.format(field=field, size=size, max=MAX_PATTERN_BYTES), field=field
        )
    options = re2.Options()
    options.max_mem = RE2_MAX_MEM
    options.log_errors = False
    options.never_capture = True  # only the whole match is used; keeps searches on the DFA
    if as_bytes:
        options.encoding = re2.Options.Encoding.LATIN1
    if multiline:
        source = b"(?m)" + source if isinstance(source, bytes) else "(?m)" + source
    try:
        compiled = re2.compile(source, options)
    except UnicodeEncodeError:
        raise PatternSyntaxError("a lone surrogate is not text") from None
    except re2.error as exc:
        raw = exc.args[0] if exc.args else ""
        detail = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        if "too large" in detail:
            raise InvalidArgument(
                messages.PATTERN_TOO_COMPLEX.format(
                    field=field, size=f"over {MAX_PROGRAM_SIZE}", max=MAX_PROGRAM_SIZE
                ),
                field=field,
            ) from None
        raise PatternSyntaxError(detail) from None
    if compiled.programsize > MAX_PROGRAM_SIZE:
        raise InvalidArgument(
            messages.PATTERN_TOO_COMPLEX.format(field=field, size=compiled.programsize, max=MAX_PROGRAM_SIZE),
            field=field,
        )
    return compiled


def _escape_byte(c: int) -> bytes:
    return bytes([c]) if chr(c).isalnum() and c < 0x80 else b"\\x%02x" % c


def glob_to_regex(pattern: bytes) -> bytes:
    """Glob to unanchored RE2 regex: ``*`` any run within a line, ``?`` one byte, ``[..]`` a class."""
    out = bytearray()
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i : i + 1]
        i += 1
        if c == b"*":
            out += rb"[^\n]*?"
        elif c == b"?":
            out += rb"[^\n]"
        elif c == b"[":
            j = pattern.find(b"]", i + 1 if pattern[i : i + 1] in (b"!", b"]") else i)
            if j < 0:
                out += rb"\x5b"
                continue
            body = pattern[i:j]
            i = j + 1
            out += b"["
            if body.startswith(b"!"):
                out += b"^"
                body = body[1:]
            elif body.startswith(b"^"):
                out += b"^"  # kept as negation, as before
                body = body[1:]
            for k, b in enumerate(body):
                inner_dash = b == 0x2D and 0 < k < len(body) - 1
                out += b"-" if inner_dash else _escape_byte(b)
            out += b"]"
        else:
            out += _escape_byte(c[0])
    return bytes(out)


class Matcher:
    """A compiled match spec. ``find`` searches a window, given how much of it was already searched."""

    __slots__ = ("_literal", "_regex", "mode", "pattern", "program_size", "reach")

    def __init__(self, pattern: bytes, mode: MatchMode = "literal") -> None:
        if not pattern:
            raise InvalidArgument(messages.MATCH_EMPTY)
        self.pattern = pattern
        self.mode = mode
        self._literal: bytes | None = None
        self._regex: Any = None
        self.program_size = 0
        if mode == "literal":
            self._literal = pattern
            self.reach = len(pattern)
            return
        if mode == "regex":
            source, bounded = pattern, not (_UNBOUNDED & set(pattern))
        else:
            stripped = pattern.strip(b"*") or b"*"
            source, bounded = glob_to_regex(stripped), b"*" not in stripped
        try:
            self._regex = compile_re2(source, "match.pattern", multiline=True)
        except PatternSyntaxError as exc:
            raise InvalidArgument(
                messages.MATCH_BAD_RE2.format(error=exc.detail, unsupported=messages.RE2_UNSUPPORTED),
                field="match.pattern",
            ) from None
        self.program_size = int(self._regex.programsize)
        # Every atom of a pattern without repetition matches at most one byte.
        self.reach = len(pattern) if bounded else REGEX_LOOKBACK

    @classmethod
    def from_spec(cls, spec: Any) -> Matcher:
        """Build from the tool shape ``{"pattern", "mode", "pattern_encoding"}`` (or a bare string).

        A matcher is immutable, so the same spec gives the same (cached) matcher: an agent's prompt
        or ``OK`` is compiled once, not once per call."""
        key = _spec_key(spec)
        if key is None:
            return cls._build(spec)
        return _cached_matcher(cls, key)

    @classmethod
    def _build(cls, spec: Any) -> Matcher:
        if isinstance(spec, str):
            spec = {"pattern": spec}
        if not isinstance(spec, dict):
            raise InvalidArgument(messages.MATCH_NOT_OBJECT)
        reject_unknown_keys(spec, MATCH_KEYS, "match")
        pattern = spec.get("pattern")
        if not isinstance(pattern, str):
            raise InvalidArgument(messages.MATCH_NO_PATTERN)
        mode = spec.get("mode", "literal")
        if mode not in MATCH_MODES:
            raise InvalidArgument(messages.MATCH_BAD_MODE.format(value=mode, allowed=", ".join(MATCH_MODES)))
        raw = decode_input(pattern, str(spec.get("pattern_encoding", "utf8")), field="match.pattern")
        ansi = spec.get("ansi", "keep")
        if ansi not in ("keep", "ignore"):
            raise InvalidArgument(messages.MATCH_BAD_ANSI.format(value=str(ansi)[:80]))
        if ansi == "ignore":
            return AnsiBlindMatcher(raw, mode)
        return cls(raw, mode)

    def for_lines(self) -> Matcher:
        """The matcher a line-framed read tests each line with: a line frame holds no line end, so a
        literal or glob pattern's leading and trailing CR/LF are dropped (``"\\r\\nOK\\r\\n"`` finds
        the line ``OK``, as it would in the raw bytes). A regex is kept as written (``OK$`` is how a
        regex says it)."""
        core = self.pattern.strip(b"\r\n")
        if self.mode == "regex" or not core or core == self.pattern:
            return self
        return type(self)(core, self.mode)

    def resume_at(self, searched: int) -> int:
        """Where a search resumes when ``window[:searched]`` held no complete match."""
        return max(0, searched - self.reach + 1)

    def find(self, window: bytes | bytearray, searched: int = 0, end: int | None = None) -> Span | None:
        """First match in ``window[:end]``; ``window[:searched]`` is known to hold no complete match.

        A match longer than ``reach`` that began before that is not looked for again. Context
        (``^``, ``\\b``) still sees the bytes before the resume point.
        """
        stop = len(window) if end is None else end
        begin = self.resume_at(searched)
        if self._literal is not None:
            i = window.find(self._literal, begin, stop)
            return None if i < 0 else Span(i, i + len(self._literal))
        m = self._regex.search(window, begin, stop)
        return None if m is None else Span(m.start(), m.end())


def _spec_key(spec: Any) -> Any:
    """A hashable form of a spec made of short strings only (else None: not cached)."""
    if isinstance(spec, str):
        return spec if len(spec) <= _CACHED_PATTERN_MAX else None
    if (
        isinstance(spec, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in spec.items())
        and sum(len(v) for v in spec.values()) <= _CACHED_PATTERN_MAX
    ):
        return tuple(sorted(spec.items()))
    return None


_CACHED_PATTERN_MAX = 256


_MATCHERS: dict[tuple[type[Matcher], Any], Matcher] = {}
_MATCHERS_MAX = 256


def _cached_matcher(cls: type[Matcher], key: Any) -> Matcher:
    found = _MATCHERS.get((cls, key))
    if found is None:
        found = cls._build(key if isinstance(key, str) else dict(key))  # a bad spec raises, uncached
        if len(_MATCHERS) >= _MATCHERS_MAX:
            _MATCHERS.clear()
        _MATCHERS[(cls, key)] = found
    return found


# A fixed pattern of ours (CSI, OSC, two-byte ESC sequences), not a user's: safe on Python's re.
_ANSI_SEQUENCE: Final = re.compile(
    rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]"
)
ANSI_BLIND_WINDOW = 64 * 1024  # how much of the newest history an ANSI-blind match searches


def strip_with_positions(data: bytes) -> tuple[bytes, list[int]]:
    """``data`` without ANSI escape sequences, and for each kept byte its index in ``data``."""
    out = bytearray()
    where: list[int] = []
    pos = 0
    for m in _ANSI_SEQUENCE.finditer(data):
        out += data[pos : m.start()]
        where.extend(range(pos, m.start()))
        pos = m.end()
    out += data[pos:]
    where.extend(range(pos, len(data)))
    return bytes(out), where


class AnsiBlindMatcher(Matcher):
    """``match: {..., "ansi": "ignore"}``: the pattern is looked for in the text with colour codes and
    terminal queries removed (``\x1b[1;32mroot\x1b[0m# `` matches ``root# ``), and the match is
    reported at its place in the raw bytes (from its first to its last matched byte)."""

    __slots__ = ()

    def find(self, window: bytes | bytearray, searched: int = 0, end: int | None = None) -> Span | None:
        stop = len(window) if end is None else end
        low = max(0, stop - ANSI_BLIND_WINDOW)
        text, where = strip_with_positions(bytes(window[low:stop]))
        span = super().find(text, 0)
        if span is None or span.end <= span.start:
            return None
        return Span(low + where[span.start], low + where[span.end - 1] + 1)
