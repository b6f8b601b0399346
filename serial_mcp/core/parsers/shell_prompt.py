"""Shell / console output with prompt detection (Linux shells, U-Boot, ESP-IDF consoles, REPLs).

ANSI escape sequences are removed before matching (consoles colour their prompts). The
default recognises a short line that *is* a prompt: at most two words then ``$``, ``#``,
``%`` or ``>`` (``$ ``, ``MT7621 # ``, ``root@OpenWrt:/# ``, ``uart:~$ ``, ``mdf> ``, ``>>> ``,
``=> ``), or ``login:`` / ``Password:``; and a line that *starts* with an unambiguous prompt
followed by a command (``root@OpenWrt:/# ls``, ``=> printenv``). Arrows (``-->``, ``>>``)
and log lines are not prompts. Log lines printed over a prompt (ESP-IDF's ``mdf> I (1248)
...``) are too ambiguous for the default; use a custom regex such as ``^mdf> ``.
A custom ``prompt`` regex is searched anywhere in the line instead; it runs on RE2 (linear time,
no backreferences or lookaround, size-limited like ``match`` patterns). A prompt frame is
``final``: the device is waiting for the next command.

A prompt usually has no line terminator: once the console has been quiet for a moment after an
unterminated tail that is a prompt, the tail becomes a (final) frame, so a read ends on it.
"""

from __future__ import annotations

import re
from typing import Any, Final

from serial_mcp import messages
from serial_mcp.core.match import PatternSyntaxError, compile_re2
from serial_mcp.core.parsers.base import Parsed, text_of

ANSI_RE: Final = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_MAX_PROMPT_LINE = 80
_WHOLE_LINE: Final = re.compile(
    r"""^(?:
        (?:\S+(?:[ ]\S+)?[ ]?)?             # at most two words: MT7621, pi@host:~, [root@box ~], uart:~
        (?:[$#%]|>>>|=>|(?<![-=>])>)        # the prompt character (not an arrow such as --> or >>)
      | (?:\S.{0,40}?[ ])?login:            # getty
      | (?:\S+[ ]){0,3}?[Pp]assword:        # login, su, sudo
    )[ \t]?$""",
    re.VERBOSE,
)
_AT_START: Final = re.compile(
    r"""^(
        [\w.\-]+@[\w.\-]+(?::\S*)?\s?[$#]   # user@host:path$ followed by a typed command
      | =>                                  # U-Boot
      | >>>                                 # Python / MicroPython REPL
    )[ ]""",
    re.VERBOSE,
)


class ShellPromptParser:
    """``{"kind": "prompt", "prompt": ..., "text": ...}`` (final) or ``{"kind": "output", "text": ...}``."""

    __slots__ = ("_custom", "validate")

    def __init__(self, prompt: str | None = None, validate: bool = False) -> None:
        self._custom = _compile_prompt(prompt) if prompt is not None else None
        self.validate = validate

    def parse(self, payload: bytes) -> Parsed:
        """Strip ANSI escapes, then look for a prompt."""
        text = ANSI_RE.sub("", text_of(payload))
        prompt = self._find(text)
        if prompt is None:
            return Parsed({"kind": "output", "text": text})
        return Parsed({"kind": "prompt", "prompt": prompt, "text": text}, final=True)

    def is_prompt(self, tail: bytes) -> bool:
        """Is this unterminated tail (the console went quiet after it) a prompt? ANSI sequences
        around it — busybox sends ``ESC[6n`` after every prompt — do not hide it."""
        text = ANSI_RE.sub("", text_of(tail))
        return "\n" not in text and "\r" not in text and self._find(text) is not None

    def _find(self, text: str) -> str | None:
        if self._custom is not None:
            m = self._custom.search(text)
            return m.group(0) if m else None
        if len(text) <= _MAX_PROMPT_LINE and _WHOLE_LINE.match(text):
            return text
        m = _AT_START.match(text)
        return m.group(1) if m else None


def _compile_prompt(prompt: str) -> Any:
    """A user prompt regex on RE2; a syntax error surfaces as ``re.error`` (the parser config contract)."""
    try:
        return compile_re2(prompt, "rx_parser.prompt", as_bytes=False)
    except PatternSyntaxError as exc:
        raise re.error(f"{exc.detail}; {messages.RE2_UNSUPPORTED}") from None
