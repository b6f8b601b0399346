"""PortLines: a connection's control side, one of its owned parts (``conn.lines``).

It holds the port handle it controls (the connection hands it a reopened one: ``attach``), the line
turn and the DTR/RTS levels last set. The engine never takes the handle or the turn's lock itself (an
AST rule in tests/unit/test_layer_rules.py holds it): it asks the part to read the modem lines, set
DTR/RTS/BREAK, apply settings, drop the output queue, or for one of the handle's declared
capabilities (serial/handle.py: lab controls, replay progress). The blocking ones (``*_blocking``)
are run off the event loop by the caller. ``turn()`` is held while the lines change, so
``set_dtr_rts``, ``send_break`` and capture_boot's reset pulse never interleave.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from serial_mcp.serial.handle import LabControls, ReportsProgress, low_latency

if TYPE_CHECKING:
    from serial_mcp.core.settings import SerialSettings
    from serial_mcp.serial.handle import PortHandle


class PortLines:
    """The port's lines and settings, as ``Connection.lines``; its fields change only through these
    operations."""

    def __init__(self, handle: PortHandle) -> None:
        self._handle = handle
        self._turn = asyncio.Lock()
        self._dtr: bool | None = None  # the level last set (None: untouched since open)
        self._rts: bool | None = None

    def attach(self, handle: PortHandle) -> None:
        """Control ``handle`` from now on (the connection reopened its port)."""
        self._handle = handle

    @property
    def dtr(self) -> bool | None:
        """The DTR level last set (None: untouched since open)."""
        return self._dtr

    @property
    def rts(self) -> bool | None:
        """The RTS level last set (None: untouched since open)."""
        return self._rts

    def keep_on_close(self) -> bool:
        """Closing will leave DTR and RTS as they are (HUPCL cleared on a local tty): a board whose
        reset hangs on them is not reset by the close and the next open. Blocking."""
        from serial_mcp.serial.system import keep_lines_on_close

        return keep_lines_on_close(self._handle)

    def levels_set(self, dtr: bool | None = None, rts: bool | None = None) -> None:
        """DTR and/or RTS were set to these levels (None: that line was left alone)."""
        if dtr is not None:
            self._dtr = dtr
        if rts is not None:
            self._rts = rts

    def turn(self) -> asyncio.Lock:
        """``async with conn.lines.turn():`` — the lines are this caller's until it ends."""
        return self._turn

    def lab_controls(self) -> LabControls | None:
        """The port's labgrid power and digital outputs (serial/handle.py's ``LabControls``), or None."""
        return self._handle if isinstance(self._handle, LabControls) else None

    def replay_progress(self) -> ReportsProgress | None:
        """A replay:// device's progress reporter (``ReportsProgress``), or None for any other port."""
        return self._handle if isinstance(self._handle, ReportsProgress) else None

    def modem_lines(self) -> dict[str, bool | None]:
        """CTS, DSR, RI, CD as the driver reports them (None: unknown); OSError if the port is gone."""
        return self._handle.modem_lines()

    def low_latency(self) -> bool | None:
        """Whether the driver's low-latency mode is on (None: not a port that has one)."""
        return low_latency(self._handle)

    def set_blocking(self, dtr: bool | None, rts: bool | None) -> None:
        """Set DTR and/or RTS (None: leave it) on the port, DTR first (``levels_set`` then, on the loop)."""
        if dtr is not None:
            self._handle.set_dtr(dtr)
        if rts is not None:
            self._handle.set_rts(rts)

    def set_break_blocking(self, on: bool) -> None:
        self._handle.set_break(on)

    def apply_settings_blocking(self, settings: SerialSettings) -> None:
        self._handle.apply_settings(settings)

    def reset_output_blocking(self) -> None:
        """Drop what the driver holds to send (``flush(target="output")``)."""
        self._handle.reset_output()
