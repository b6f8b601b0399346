"""What a connection remembers besides its UART settings: its default codecs, pacing and profile."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from serial_mcp.core.pace import Pace

CODEC_FIELDS = ("protocol", "rx_framing", "tx_framing", "rx_parser")


@dataclass(slots=True)
class ConnectionOptions:
    """A connection's defaults: a call's own field wins, then its protocol, then these."""

    protocol: str | None = None
    rx_framing: dict[str, Any] | None = None
    tx_framing: dict[str, Any] | None = None
    rx_parser: dict[str, Any] | None = None
    pace: Pace | None = None
    profile: str | None = None  # the device profile this connection is bound to (write-through)

    @property
    def plain(self) -> bool:
        """No default codec at all (most connections): nothing to resolve on a call."""
        return (
            self.protocol is None
            and self.rx_framing is None
            and self.tx_framing is None
            and self.rx_parser is None
        )

    def codecs(self) -> dict[str, Any]:
        """The codec layer as ``presets.effective`` takes it."""
        return {name: getattr(self, name) for name in CODEC_FIELDS}

    def as_dict(self) -> dict[str, Any]:
        """The set fields as JSON values (for status and profiles)."""
        out: dict[str, Any] = {k: v for k, v in self.codecs().items() if v is not None}
        if self.pace is not None:
            out["pace"] = self.pace.as_dict()
        if self.profile is not None:
            out["profile"] = self.profile
        return out
