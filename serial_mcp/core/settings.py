"""UART settings as one validated value: baud rate, data bits, parity, stop bits, flow control.

Validated here, before any port is touched, so a bad value never half-configures a device.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from serial_mcp import messages
from serial_mcp.errors import InvalidArgument, Short

Parity = Literal["none", "even", "odd", "mark", "space"]
FlowControl = Literal["none", "software", "hardware"]

PARITIES: tuple[Parity, ...] = ("none", "even", "odd", "mark", "space")
PARITY_ALIASES = {"n": "none", "e": "even", "o": "odd", "m": "mark", "s": "space"}
FLOW_CONTROLS: tuple[FlowControl, ...] = ("none", "software", "hardware")
DATA_BITS = (5, 6, 7, 8)
STOP_BITS = (1, 1.5, 2)
MAX_BAUD = 12_000_000


@dataclass(frozen=True, slots=True)
class SerialSettings:
    """The line settings of one connection (defaults: 115200 8N1, no flow control)."""

    baud_rate: int = 115200
    data_bits: int = 8
    parity: Parity = "none"
    stop_bits: float = 1
    flow_control: FlowControl = "none"
    rs485: dict[str, Any] | None = None  # open-time RS-485 transceiver control (checked: open's Rs485Spec)
    low_latency: bool = False  # Linux ASYNC_LOW_LATENCY where the driver supports it

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def pyserial(self) -> dict[str, Any]:
        """Baud rate, data bits, parity (its letter: ``N``, ``E`` …) and stop bits under pyserial's names."""
        return {
            "baudrate": self.baud_rate,
            "bytesize": self.data_bits,
            "parity": self.parity[0].upper(),
            "stopbits": self.stop_bits,
        }

    def updated(self, **changes: Any) -> SerialSettings:
        """A validated copy with ``changes`` applied (None values are ignored)."""
        return validate_settings(replace(self, **{k: v for k, v in changes.items() if v is not None}))


def validate_settings(s: SerialSettings) -> SerialSettings:
    """Check every field; normalise parity aliases (``N``/``E``/``O``) and integral stop bits."""
    if isinstance(s.baud_rate, bool) or not isinstance(s.baud_rate, int) or not 1 <= s.baud_rate <= MAX_BAUD:
        raise InvalidArgument(messages.BAD_BAUD.format(value=Short(s.baud_rate), max=MAX_BAUD))
    if isinstance(s.data_bits, bool) or s.data_bits not in DATA_BITS:
        raise InvalidArgument(messages.BAD_DATA_BITS.format(value=Short(s.data_bits)))
    parity = PARITY_ALIASES.get(str(s.parity).lower(), str(s.parity).lower())
    if parity not in PARITIES:
        raise InvalidArgument(messages.BAD_PARITY.format(value=Short(s.parity), allowed=", ".join(PARITIES)))
    if (
        isinstance(s.stop_bits, bool)
        or not isinstance(s.stop_bits, int | float)
        or s.stop_bits not in STOP_BITS
    ):
        raise InvalidArgument(messages.BAD_STOP_BITS.format(value=Short(s.stop_bits)))
    if s.flow_control not in FLOW_CONTROLS:
        raise InvalidArgument(
            messages.BAD_FLOW.format(value=Short(s.flow_control), allowed=", ".join(FLOW_CONTROLS))
        )
    stop = int(s.stop_bits) if float(s.stop_bits).is_integer() else s.stop_bits
    if not isinstance(s.low_latency, bool):
        raise InvalidArgument(messages.BAD_LOW_LATENCY)
    return replace(s, parity=parity, stop_bits=stop)
