"""PortControls: the named operations the engine calls on a connection's port handle and line lock.

The engine never takes ``conn.handle`` or ``conn.line_lock`` itself (an AST rule in
tests/unit/test_layer_rules.py holds it): it asks the connection to read the modem lines, set
DTR/RTS/BREAK, apply settings, drop the output queue, or for one of the handle's declared
capabilities (serial/handle.py: lab controls, replay progress). The blocking ones (``*_blocking``)
are run off the event loop by the caller, as before. ``line_turn()`` is held while the lines
change, so ``set_dtr_rts``, ``send_break`` and capture_boot's reset pulse never interleave.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from serial_mcp.serial.handle import LabControls, ReportsProgress, low_latency

if TYPE_CHECKING:
    from serial_mcp.core.settings import SerialSettings
    from serial_mcp.serial.handle import PortHandle

class PortControls:
    """Mixed into :class:`~serial_mcp.serial.connection.Connection`, which sets both attributes."""

    handle: PortHandle
    line_lock: asyncio.Lock

    def line_turn(self) -> asyncio.Lock:
        """``async with conn.line_turn():`` — the lines are this caller's until it ends."""
        return self.line_lock

    def lab_controls(self) -> LabControls | None:
        """The port's labgrid power and digital outputs (serial/handle.py's ``LabControls``), or None."""
        return self.handle if isinstance(self.handle, LabControls) else None

    def replay_progress(self) -> ReportsProgress | None:
        """A replay:// device's progress reporter (``ReportsProgress``), or None for any other port."""
        return self.handle if isinstance(self.handle, ReportsProgress) else None

    def modem_lines(self) -> dict[str, bool | None]:
        """CTS, DSR, RI, CD as the driver reports them (None: unknown); OSError if the port is gone."""
        return self.handle.modem_lines()

    def low_latency(self) -> bool | None:
        """Whether the driver's low-latency mode is on (None: not a port that has one)."""
        return low_latency(self.handle)

    def set_lines_blocking(self, dtr: bool | None, rts: bool | None) -> None:
        """Set DTR and/or RTS (None: leave it) on the port, DTR first."""
        if dtr is not None:
            self.handle.set_dtr(dtr)
        if rts is not None:
            self.handle.set_rts(rts)

    def set_break_blocking(self, on: bool) -> None:
        self.handle.set_break(on)

    def apply_settings_blocking(self, settings: SerialSettings) -> None:
        self.handle.apply_settings(settings)

    def reset_output_blocking(self) -> None:
        """Drop what the driver holds to send (``flush(target="output")``)."""
        self.handle.reset_output()
