"""A port name without its secrets: the user part of a URL, option values our schemes do not document,
a ``password=``-style value in a device path. Imports nothing of ours, so ``errors`` can redact the
port it carries."""

from __future__ import annotations

import re
import urllib.parse
from typing import Final

# the options pyserial's handlers document (and implement) for each scheme
PYSERIAL_OPTIONS: Final[dict[str, tuple[str, ...]]] = {
    "socket": ("logging",),
    "rfc2217": ("logging", "ign_set_control", "poll_modem", "timeout"),
    "loop": ("logging",),
}
REDACTED: Final = "***"
# options whose values are shown: the ones our schemes document (none carries a secret)
_SHOWN_OPTIONS: Final[dict[str, frozenset[str]]] = {
    **{scheme: frozenset(keys) for scheme, keys in PYSERIAL_OPTIONS.items()},
    "replay": frozenset({"mode", "speed", "loop"}),
    "sim": frozenset({"state", "bootdelay"}),
}
_NO_USER_PART: Final = frozenset({"replay", "sim", "loop"})  # a path follows their "://", not a host
_MIN_SECRET: Final = 3  # shorter pieces are not looked for in free text (they would blot out words)
# a credential written into a device path (``/dev/ttyS0?pw=...``, ``.../password=...``): its value is hidden
_PATH_SECRET: Final = re.compile(
    r"(?i)((?:^|[?&;,/\s])(?:pass(?:word|wd)?|pwd?|token|secret|api[_-]?key|auth|credentials?)\s*[=:]\s*)([^&;,/\s]+)"
)


def scheme_of(port: str) -> str | None:
    """The scheme as pyserial's ``serial_for_url`` finds it (text before the first ``://``, lower
    case), or None for a device path."""
    scheme, sep, _ = port.partition("://")
    return scheme.lower() if sep else None


# --- naming a port without its secrets ---------------------------------------------------------------


def redact(port: str) -> str:
    """``port`` as it may be shown: each user part (``…://user:pw@``) and every option value after
    ``?`` (but those of the options our schemes document) and any ``#fragment`` become ``***``; in a
    device path, every value after ``?`` and a ``password=``-style value. A port with nothing to hide
    is returned unchanged."""
    shown, _ = _split_secrets(port) if "://" in port else _path_secrets(port)
    return shown


def scrub(text: str, port: str) -> str:
    """``text`` (an error message, pyserial's own included) without ``port``'s secrets: the port as
    given becomes ``redact(port)``, and each secret found elsewhere in it ``***``."""
    shown, secrets = _split_secrets(port) if "://" in port else _path_secrets(port)
    if not secrets:
        return text
    text = text.replace(port, shown).replace(repr(port)[1:-1], shown)
    for secret in sorted(secrets, key=len, reverse=True):
        for form in {secret, urllib.parse.unquote(secret), repr(secret)[1:-1]}:
            if len(form) >= _MIN_SECRET:
                text = text.replace(form, REDACTED)
    return text


def _path_secrets(path: str) -> tuple[str, list[str]]:
    """A device path's ``(redacted path, the secrets taken out)``: option values after ``?`` and
    ``password=``-style values anywhere."""
    secrets: list[str] = []

    def hide(m: re.Match[str]) -> str:
        secrets.append(m.group(2))
        return m.group(1) + REDACTED

    head, question, query = path.partition("?")
    shown = _PATH_SECRET.sub(hide, head)
    if question:
        shown += "?" + _redact_query(query, frozenset(), secrets)
    return shown, [s for s in secrets if s]


def _redact_query(query: str, shown_keys: frozenset[str], secrets: list[str]) -> str:
    """``query`` with every value but those of ``shown_keys`` redacted (and added to ``secrets``)."""
    items = []
    for item in query.split("&"):
        key, eq, value = item.partition("=")
        if eq and value and key.strip().lower() not in shown_keys:
            secrets.append(value)
            item = f"{key}={REDACTED}"
        items.append(item)
    return "&".join(items)


def _split_secrets(port: str) -> tuple[str, list[str]]:
    """``(redacted port, the secrets taken out)``."""
    secrets: list[str] = []
    head, hash_sign, fragment = port.partition("#")
    head, question, query = head.partition("?")
    pieces = head.split("://")
    for i in range(1, len(pieces)):
        scheme = pieces[i - 1].rsplit("/", 1)[-1].lower()
        piece = pieces[i]
        at = piece.rfind("@")
        if at < 0 or scheme in _NO_USER_PART:
            continue
        user = piece[:at]
        secrets += [user, *user.split(":", 1)]
        pieces[i] = REDACTED + piece[at:]
    shown = "://".join(pieces)
    if question:
        shown += "?" + _redact_query(query, _SHOWN_OPTIONS.get(scheme_of(port) or "", frozenset()), secrets)
    if hash_sign:
        if fragment:
            secrets.append(fragment)
        shown += "#" + (REDACTED if fragment else "")
    return shown, [s for s in secrets if s]
