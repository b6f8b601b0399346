"""The one check for a keyed argument object (``match``, ``respond``, ``pace``, ``reconnect``,
``reset``, ``rs485``, dialog steps …): an unknown key is refused, naming the closest known one, so
an agent's typo (``{"patern": "OK"}``) is never silently ignored.

``keyed`` makes that check the validator of a declared nested option (a ``TypedDict``: typed for
``mypy`` in the Python API, validated by pydantic in the tools, the API and the profiles alike),
with the option's own one-line texts for a value that is not an object or is out of range."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError, ValidatorFunctionWrapHandler, WrapValidator

from serial_mcp import messages
from serial_mcp.errors import InvalidArgument

MAX_SHOWN = 80  # an unknown key is quoted at most this long
RANGE_ERRORS = frozenset({"greater_than", "greater_than_equal", "less_than", "less_than_equal"})


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


@dataclass(frozen=True, slots=True)
class Keyed(WrapValidator):
    """The validator of a declared nested option; ``wire`` is the plain type its tool publishes
    (the tool takes the object as it comes, and the options model checks it with these texts)."""

    wire: object = None


def keyed(
    spec: type[Mapping[str, Any]],
    field: str,
    bad: str,
    wrong: str | None = None,
    typed: str | None = None,
    wire: object = dict[str, object] | None,
    texts: Mapping[str, str] | None = None,
) -> Keyed:
    """The validator of an option whose object form is ``spec`` (a ``TypedDict`` whose fields declare
    their types and ranges): an object's unknown key is named with the closest known one, a value out
    of range is ``wrong`` (default ``bad``), of the wrong type ``typed`` (default ``wrong``); what is
    no object and not what the option's other forms take (None, ``true`` …) is ``bad``; ``texts``
    gives a field its own text for any fault of its value."""
    allowed = tuple(spec.__annotations__)

    def check(value: object, handler: ValidatorFunctionWrapHandler) -> object:
        if isinstance(value, Mapping):
            reject_unknown_keys(value, allowed, field)
        try:
            return handler(value)
        except ValidationError as exc:
            if not isinstance(value, Mapping):
                raise InvalidArgument(bad) from None
            errors = exc.errors(include_url=False)
            own = (texts or {}).get(str(errors[0]["loc"][0]) if errors[0]["loc"] else "")
            ranged = any(e["type"] in RANGE_ERRORS for e in errors)
            raise InvalidArgument(own or (wrong if ranged else typed or wrong) or bad) from None

    return Keyed(check, wire=wire)
