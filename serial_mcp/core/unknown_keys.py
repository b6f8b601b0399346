"""The one check for a keyed argument object (``match``, ``respond``, ``pace``, ``reconnect``,
``reset``, ``rs485``, dialog steps …): an unknown key is refused, naming the closest known one, so
an agent's typo (``{"patern": "OK"}``) is never silently ignored."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from serial_mcp import messages
from serial_mcp.errors import InvalidArgument

MAX_SHOWN = 80  # an unknown key is quoted at most this long


def did_you_mean(word: object, choices: Iterable[str]) -> str:
    """A ' Did you mean ...?' hint for the closest of ``choices``, or ``''``."""
    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    if not close:
        lowered = {c.lower(): c for c in choices}
        if word.lower() in lowered:
            close = [lowered[word.lower()]]
    return messages.OPTIONS_DID_YOU_MEAN.format(match=close[0]) if close else ""


def reject_unknown_keys(spec: Mapping[str, Any], allowed: Iterable[str], field: str) -> None:
    """Raise ``invalid_argument`` for the first key of ``spec`` not in ``allowed``."""
    known = tuple(allowed)
    unknown = sorted(str(k) for k in spec if k not in known)
    if unknown:
        key = unknown[0]
        raise InvalidArgument(
            messages.UNKNOWN_KEY.format(
                field=field, key=key[:MAX_SHOWN], hint=did_you_mean(key, known), allowed=", ".join(known)
            )
        )
