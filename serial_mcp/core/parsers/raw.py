"""The ``raw`` parser: no interpretation, only the ``validate`` switch for framing-level checksums."""

from __future__ import annotations

from serial_mcp.core.parsers.base import Parsed


class RawParser:
    """Marks every payload as ``{"kind": "raw"}``."""

    __slots__ = ("validate",)

    def __init__(self, validate: bool = False) -> None:
        self.validate = validate

    def parse(self, payload: bytes) -> Parsed:
        """Always ``{"kind": "raw"}``."""
        return Parsed({"kind": "raw"})
