"""What every payload parser returns and the protocol it follows (sans-IO; never raises on device data)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(slots=True)
class Parsed:
    """The interpretation of one frame's payload.

    ``fields`` is JSON-serialisable; ``final`` marks a frame that ends a command/response
    exchange (AT ``OK``/``ERROR``, grbl ``ok``/``error:N``, a shell prompt); ``shown`` False
    asks the pipeline to leave the frame out and count it (a filter, e.g. ``esp_log``'s
    ``print_filter``, hid it). Treat it as
    immutable; not ``frozen`` because that triples its cost and one is built per frame.
    """

    fields: dict[str, Any] = field(default_factory=dict)
    checksum_valid: bool | None = None
    final: bool = False
    shown: bool = True


class Parser(Protocol):
    """Parses one payload; ``validate`` asks the pipeline to drop frames with a bad checksum."""

    validate: bool

    def parse(self, payload: bytes) -> Parsed:
        """Interpret ``payload`` (must not raise, whatever the bytes)."""
        ...


class OptionlessParser:
    """A parser whose one option is ``validate``."""

    __slots__ = ("validate",)

    def __init__(self, validate: bool = False) -> None:
        self.validate = validate


def text_of(payload: bytes) -> str:
    """The payload as text: UTF-8 (invalid bytes become U+FFFD), line terminators stripped."""
    return payload.decode("utf-8", "replace").strip("\r\n")
