"""Validation of the JSON-shaped option objects agents send (rx_framing, tx_framing, rx_parser).

Every error names the field, the bad key or value and what is allowed, and suggests the
closest valid name for a typo, because an agent's typo must never be silently ignored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from serial_mcp import messages
from serial_mcp.core.unknown_keys import did_you_mean
from serial_mcp.errors import InvalidArgument

_MAX_SHOWN = 60


def _shown(value: object) -> str:
    """A short repr for error messages (agents may send huge values)."""
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


class Options:
    """One option object being read: typed getters that raise InvalidArgument naming ``field``."""

    __slots__ = ("_raw", "field")

    def __init__(self, raw: object, field: str, example: str = '{"type": "line"}') -> None:
        if not isinstance(raw, Mapping):
            raise InvalidArgument(
                messages.OPTIONS_NOT_OBJECT.format(field=field, example=example, got=_shown(raw)), field=field
            )
        self._raw: Mapping[str, Any] = raw
        self.field = field

    def __contains__(self, key: str) -> bool:
        return key in self._raw

    def check_keys(self, allowed: Sequence[str], context: str = "") -> None:
        """Reject any key not in ``allowed`` (the message lists them and suggests the closest)."""
        for key in self._raw:
            if key not in allowed:
                raise InvalidArgument(
                    messages.OPTIONS_UNKNOWN_KEY.format(
                        key=key,
                        field=self.field,
                        hint=did_you_mean(key, allowed),
                        context=context,
                        allowed=", ".join(allowed),
                    ),
                    field=self.field,
                    key=key,
                )

    def _bad(self, template: str, key: str, **values: object) -> InvalidArgument:
        return InvalidArgument(
            template.format(field=self.field, key=key, value=_shown(self._raw.get(key)), **values),
            field=f"{self.field}.{key}",
        )

    def choice(self, key: str, allowed: Sequence[str], default: str | None = None) -> str:
        """A string from ``allowed``; required when ``default`` is None."""
        value = self._raw.get(key)
        if value is None:
            if default is None:
                raise self._bad(messages.OPTIONS_MISSING, key, allowed=", ".join(allowed))
            return default
        if value not in allowed:
            hint = did_you_mean(value, allowed)
            raise self._bad(messages.OPTIONS_BAD_CHOICE, key, hint=hint, allowed=", ".join(allowed))
        return str(value)

    def boolean(self, key: str, default: bool) -> bool:
        """A JSON boolean (numbers and strings are refused, they are usually mistakes)."""
        value = self._raw.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self._bad(messages.OPTIONS_BAD_BOOL, key)
        return value

    def integer(self, key: str, default: int | None, low: int, high: int) -> int:
        """A whole number in ``[low, high]`` (an integral float such as 2.0 is accepted)."""
        value = self._raw.get(key)
        if value is None and default is not None:
            return default
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise self._bad(messages.OPTIONS_BAD_INT, key, low=low, high=high)
        return value

    def choice_int(self, key: str, allowed: Sequence[int], default: int) -> int:
        """A whole number from ``allowed`` (such as prefix_size 1, 2 or 4)."""
        value = self._raw.get(key)
        if value is None:
            return default
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or value not in allowed:
            raise self._bad(
                messages.OPTIONS_BAD_CHOICE, key, hint="", allowed=", ".join(str(a) for a in allowed)
            )
        return value

    def string(self, key: str, default: str | None) -> str:
        """A non-empty string; required when ``default`` is None."""
        value = self._raw.get(key)
        if value is None:
            if default is None:
                raise self._bad(messages.OPTIONS_REQUIRED, key)
            return default
        if not isinstance(value, str) or not value:
            raise self._bad(messages.OPTIONS_BAD_STRING, key)
        return value

    def string_list(self, key: str, default: Sequence[str]) -> list[str]:
        """A non-empty list of non-empty strings (a single string counts as a list of one)."""
        value = self._raw.get(key)
        if value is None:
            if not default:
                raise self._bad(messages.OPTIONS_REQUIRED, key)
            return list(default)
        if isinstance(value, str):
            value = [value]
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(item, str) and item for item in value)
        ):
            raise self._bad(messages.OPTIONS_BAD_STRING_LIST, key)
        return list(value)

    def raw(self, key: str) -> object:
        """The unvalidated value of ``key`` (None when absent), for nested objects."""
        return self._raw.get(key)
