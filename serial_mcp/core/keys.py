"""Named terminal keys (``ctrl-c``, ``enter``, ``up``, ``f1`` ...) to the bytes a terminal sends.

Shells, bootloader menus and full-screen TUIs on a serial console expect the bytes a human's
terminal emulator would send for a key press; an agent names the key instead of spelling
escape sequences. The sequences are xterm's (the terminal picocom, tio and screen usually run
in) in normal cursor mode, which VT220-style line editors (busybox, U-Boot's cli, readline)
also accept:

* ``enter`` sends CR (0x0D), as a terminal's Return key does in raw mode; the device's tty
  turns it into a newline. Use ``lf`` or ``crlf`` for devices that want those.
* ``backspace`` sends DEL (0x7F), as xterm and the Linux console do; ``bs`` sends 0x08.
* ``delete`` is ``ESC[3~``; ``home``/``end`` are ``ESC[H``/``ESC[F``; ``insert``,
  ``page-up``, ``page-down`` are ``ESC[2~``, ``ESC[5~``, ``ESC[6~``.
* ``f1``-``f4`` are ``ESC O P``-``ESC O S`` (VT100 PF1-PF4), ``f5``-``f12`` are ``ESC[15~`` ...
  ``ESC[24~`` (VT220).
* ``ctrl-a``-``ctrl-z`` are 0x01-0x1A; ``ctrl-@`` (``ctrl-space``) 0x00, ``ctrl-[`` 0x1B,
  ``ctrl-\\`` 0x1C, ``ctrl-]`` 0x1D, ``ctrl-^`` 0x1E, ``ctrl-_`` 0x1F, ``ctrl-?`` 0x7F.

Names are case-insensitive; ``_`` and spaces count as ``-``; ``C-c``, ``^C``, ``ctrl+c`` and
``control-c`` all mean ``ctrl-c``. A single printable character stands for itself (``"y"``,
``":"``, ``"é"`` as UTF-8), so a menu answer fits between named keys. An unknown name raises
InvalidArgument naming the closest.
"""

from __future__ import annotations

import difflib
import re
import string
from collections.abc import Sequence
from typing import Final

from serial_mcp import messages
from serial_mcp.errors import InvalidArgument

_CSI: Final = "\x1b["
_SS3: Final = "\x1bO"

_NAMED: Final[dict[str, str]] = {
    "enter": "\r",
    "cr": "\r",
    "lf": "\n",
    "crlf": "\r\n",
    "tab": "\t",
    "space": " ",
    "esc": "\x1b",
    "backspace": "\x7f",
    "bs": "\x08",
    "delete": _CSI + "3~",
    "insert": _CSI + "2~",
    "up": _CSI + "A",
    "down": _CSI + "B",
    "right": _CSI + "C",
    "left": _CSI + "D",
    "home": _CSI + "H",
    "end": _CSI + "F",
    "page-up": _CSI + "5~",
    "page-down": _CSI + "6~",
    "f1": _SS3 + "P",
    "f2": _SS3 + "Q",
    "f3": _SS3 + "R",
    "f4": _SS3 + "S",
    "f5": _CSI + "15~",
    "f6": _CSI + "17~",
    "f7": _CSI + "18~",
    "f8": _CSI + "19~",
    "f9": _CSI + "20~",
    "f10": _CSI + "21~",
    "f11": _CSI + "23~",
    "f12": _CSI + "24~",
}
_CTRL_SYMBOLS: Final[dict[str, int]] = {
    "@": 0x00,
    "[": 0x1B,
    "\\": 0x1C,
    "]": 0x1D,
    "^": 0x1E,
    "_": 0x1F,
    "?": 0x7F,
}

#: Every canonical key name and the bytes it sends.
KEYS: Final[dict[str, bytes]] = {
    **{name: seq.encode("ascii") for name, seq in _NAMED.items()},
    **{f"ctrl-{c}": bytes([ord(c) - 0x60]) for c in string.ascii_lowercase},
    **{f"ctrl-{c}": bytes([code]) for c, code in _CTRL_SYMBOLS.items()},
}

_ALIASES: Final[dict[str, str]] = {
    "return": "enter",
    "newline": "lf",
    "linefeed": "lf",
    "escape": "esc",
    "del": "delete",
    "ins": "insert",
    "pageup": "page-up",
    "pgup": "page-up",
    "pagedown": "page-down",
    "pgdn": "page-down",
    "ctrl-space": "ctrl-@",
    "arrow-up": "up",
    "arrow-down": "down",
    "arrow-left": "left",
    "arrow-right": "right",
}
_CTRL_PREFIX: Final = re.compile(r"(?:ctrl|control|ctl|c)[-+](.+)|\^(.+)")
_EXAMPLES: Final = ("ctrl-c", "ctrl-d", "enter", "esc", "tab", "backspace", "up", "down", "f1", "space")


def _normalise(key: str) -> str:
    """Lower-case canonical spelling: ``C-c``/``^C``/``Ctrl+C`` -> ``ctrl-c``, ``Page Up`` -> ``page-up``."""
    text = key.strip().lower()
    match = _CTRL_PREFIX.fullmatch(text)
    if match:
        rest = match.group(1) if match.group(1) is not None else match.group(2)
        return "ctrl-" + ("@" if rest == "space" else rest)
    text = re.sub(r"[\s_]+", "-", text)
    return _ALIASES.get(text, text)


def _unknown(key: str) -> InvalidArgument:
    """The error for an unknown key, with the closest names and a few valid ones."""
    if key.strip().lower() == "break":
        return InvalidArgument(messages.KEYS_BREAK, key=key)
    close = difflib.get_close_matches(_normalise(key), [*KEYS, *_ALIASES], n=3, cutoff=0.6)
    suggestions = list(dict.fromkeys(_ALIASES.get(c, c) for c in close))
    hint = messages.KEYS_DID_YOU_MEAN.format(names=", ".join(suggestions)) if suggestions else ""
    return InvalidArgument(
        messages.KEYS_UNKNOWN.format(key=key, hint=hint, examples=", ".join(_EXAMPLES)),
        key=key,
        suggestions=suggestions,
    )


def key_names() -> list[str]:
    """Every canonical key name, in a stable order (for tool schemas and help)."""
    return list(KEYS)


def encode_key(key: str) -> bytes:
    """The bytes one named key sends; raises InvalidArgument for an unknown name."""
    if not isinstance(key, str):
        raise InvalidArgument(messages.KEYS_NOT_STRING.format(value=key), key=key)
    if len(key) == 1 and key.isprintable():
        return key.encode("utf-8")
    found = KEYS.get(_normalise(key))
    if found is None:
        raise _unknown(key)
    return found


def encode_keys(keys: Sequence[str]) -> bytes:
    """The bytes for a sequence of named keys, in order (``["ctrl-c", "enter"]`` -> ``b"\\x03\\r"``).

    All names are checked before anything is returned, so a typo sends nothing.
    """
    if isinstance(keys, str):
        keys = [keys]
    if not keys:
        raise InvalidArgument(messages.KEYS_EMPTY)
    return b"".join(encode_key(key) for key in keys)
