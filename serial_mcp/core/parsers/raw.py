"""The ``raw`` parser: no interpretation, only the ``validate`` switch for framing-level checksums."""

from __future__ import annotations

from serial_mcp.core.parsers.base import OptionlessParser, Parsed


class RawParser(OptionlessParser):
    """Marks every payload as ``{"kind": "raw"}``."""

    def parse(self, payload: bytes) -> Parsed:
        """Always ``{"kind": "raw"}``."""
        return Parsed({"kind": "raw"})
