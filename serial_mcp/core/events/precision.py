"""Text rules that keep events precise (issue 38): labels are printable text, reset glitches before a
banner are seen as such, and a traceback the program survived is an ``exception``, not a crash."""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import Final

from serial_mcp.core.events.block import MAX_TEXT, Block
from serial_mcp.core.events.model import Event

# what is not printable text: control characters, DEL and C1, U+FFFD (bytes that were not UTF-8)
NOT_PRINTABLE: Final = re.compile(r"[^\t\x20-\x7e\xa0-\ufffc\U00010000-\U0010ffff]")


def label(text: str, m: re.Match[str] | None) -> str:
    """An event's line as printable text: a head preceded by garbage (SLIP frames, reset glitches) starts
    at its match; control characters and undecodable bytes are left out."""
    if m is not None and m.start() > 0 and NOT_PRINTABLE.search(text, 0, m.start()) is not None:
        text = text[m.start() :]
    return NOT_PRINTABLE.sub("", text).strip()[:MAX_TEXT]


@functools.lru_cache(maxsize=16)
def resumes(pattern: str | None) -> re.Pattern[str]:
    """A row's ``resumes`` prompt, compiled once (None: a pattern that never matches)."""
    return re.compile(pattern or r"(?!)")


def as_exception(crash: Event) -> Event:
    """A traceback the program survived (its prompt came back): informational."""
    return dataclasses.replace(crash, kind="exception", severity="info")


def glitched(text: str, m: re.Match[str] | None) -> bool:
    """Reset glitches (NUL, 0xFF, control bytes) on a banner's line before the banner."""
    return m is not None and m.start() > 0 and NOT_PRINTABLE.search(text, 0, m.start()) is not None


class Traceback:
    """A traceback waiting for its verdict: the program went on (its row's ``resumes`` prompt came back:
    an ``exception``) or it stopped (a boot, reset or crash came first, or ``grace_lines`` other lines)."""

    __slots__ = ("_prompt", "blk")

    def __init__(self, blk: Block) -> None:
        self.blk = blk
        blk.grace = 0
        self._prompt = resumes(blk.row.sig.resumes)

    def prompt(self, text: str) -> bool:
        return self._prompt.search(text) is not None

    def after(self, text: str, stops: bool) -> bool | None:
        """A line after it (``stops``: a boot, reset or crash): True went on, False stopped, None not yet."""
        if self.prompt(text):
            return True
        if stops:
            return False
        self.blk.grace += 1
        return False if self.blk.grace >= self.blk.row.sig.grace_lines else None
