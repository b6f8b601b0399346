"""LentPort: the port pyserial's RFC 2217 ``PortManager`` drives, standing for a live Connection.

``PortManager`` (pyserial's server side) is written against a ``serial.Serial``: it sets
``baudrate``, ``bytesize``, ``parity``, ``stopbits``, ``dtr``, ``rts``, ``break_condition`` and the
flow flags, reads ``cts``/``dsr``/``ri``/``cd``, and purges buffers. Here every one of those reaches
the connection's real handle at once, on the mirror's thread (so a client's DTR/RTS timing is kept),
and is recorded in the connection's log (hence its capture) with ``source="rfc2217"``.

The client's line settings are its own: they start as the connection's, are applied to the port as
the client changes them, and ``restore`` puts the connection's settings (and lines) back when the
client leaves. ``conn.settings`` is never changed. Read-only: every change is acknowledged with
the value asked for (a refusal makes pyserial's client fail at open) but nothing is applied.

``esp_reset`` (opt-in, off by default): the ESP download-mode reset played on the port itself.
pyserial's RFC 2217 client waits at least 50 ms for the answer to every line change, so between
"DTR on" and "RTS off" of esptool's classic reset the board sits with EN released and IO0 still
high for that long: an auto-program circuit boots the flash instead of the ROM loader. With
``esp_reset``, once the client has held EN low (RTS on, DTR off), its "DTR on" is applied as the
state the sequence is heading for — DTR on and RTS off together (IO0 low, EN released) — and its
following "RTS off" finds the line already there. Nothing else changes: a client that never holds
EN low (mpremote, miniterm: DTR and RTS on at open) is passed through as is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import SerialMcpError
from serial_mcp.serial.connection import Connection

log = logging.getLogger(__name__)

SOURCE = "rfc2217"


def _setting(name: str) -> Any:
    """A pyserial attribute that reads and sets the client's ``SerialSettings`` field ``name``."""
    return property(lambda self: getattr(self.settings, name), lambda self, value: self._set(**{name: value}))


def _flow(mode: str) -> Any:
    """A pyserial flow flag (``xonxoff``, ``rtscts``): whether the client's flow control is ``mode``;
    clearing it while it is set turns flow control off, clearing it otherwise changes nothing."""

    def on(self: LentPort) -> bool:
        return self.settings.flow_control == mode

    return property(
        on, lambda self, value: self._set(flow_control=mode if value else ("none" if on(self) else None))
    )


class LentPort:
    """What the mirror's ``PortManager`` sees as its serial port (attribute names are pyserial's)."""

    def __init__(
        self, conn: Connection, *, apply: bool, purge_pending: Any = None, esp_reset: bool = False
    ) -> None:
        self.conn = conn
        self.apply = apply  # False in read-only mode: acknowledge, change nothing
        self.esp_reset = esp_reset
        self._en_held_low = False  # esp_reset: the client holds the chip in reset (RTS on, DTR off)
        self.settings: SerialSettings = conn.settings
        self._purge_pending = purge_pending  # drops what is queued for the client (PURGE receive)
        self._dtr: bool = True if conn.lines.dtr is None else conn.lines.dtr
        self._rts: bool = True if conn.lines.rts is None else conn.lines.rts
        self._break = False
        self.changed_settings = False

    # --- line settings --------------------------------------------------------------------------

    def _set(self, **change: Any) -> None:
        try:
            new = self.settings.updated(**change)
        except SerialMcpError as exc:  # PortManager answers a ValueError with the old value
            raise ValueError(exc.message) from exc
        if new == self.settings:
            return
        if self.apply:
            try:
                self.conn.handle.apply_settings(new)
            except Exception as exc:  # the driver refused: the client is told the old value
                try:  # and the handle is put back in step with the port (pyserial half-applies)
                    self.conn.handle.apply_settings(self.settings)
                except Exception:
                    log.debug("rfc2217 mirror of %s: could not put the settings back", self.conn.id)
                raise ValueError(str(exc)) from exc
            self.changed_settings = True
        self.settings = new
        self.conn.record("config", settings=new.as_dict(), source=SOURCE, applied=self.apply)

    baudrate = _setting("baud_rate")
    bytesize = _setting("data_bits")
    stopbits = _setting("stop_bits")

    parity = property(
        lambda self: self.settings.parity[0].upper(), lambda self, value: self._set(parity=value)
    )

    xonxoff = _flow("software")
    rtscts = _flow("hardware")

    # --- output lines ---------------------------------------------------------------------------

    def _drive(self, setter: Callable[[bool], None], level: bool) -> bool:
        """Drive one output line; False where the port has none (a PTY, a socket): the client is
        acknowledged all the same, as a real server with no such line would."""
        if not self.apply:
            return False
        try:
            setter(level)
        except Exception as exc:
            log.debug("rfc2217 mirror of %s: line not driven: %s", self.conn.id, exc)
            return False
        return True

    def _set_dtr(self, level: bool) -> None:
        self._dtr = bool(level)
        if self._en_held_low and self._dtr and self._rts:  # esp_reset: on to download mode
            self._download_boot()
        else:
            self._line(self._drive(self.conn.handle.set_dtr, self._dtr), dtr=self._dtr)

    def _line(self, applied: bool, dtr: bool | None = None, rts: bool | None = None) -> None:
        """DTR or RTS was driven (``applied``: on the port): noted on the connection and in its log;
        an ESP32 reset is watched for (EN held low by RTS)."""
        if applied:
            self.conn.lines.levels_set(dtr=dtr, rts=rts)
        self.conn.record("control", dtr=dtr, rts=rts, source=SOURCE, applied=applied)
        self._en_held_low = self.esp_reset and self._rts and not self._dtr

    def _download_boot(self) -> None:
        """IO0 low and EN released in one step (the client's next "RTS off" finds it done)."""
        self._en_held_low = False
        handle = self.conn.handle
        applied = self._drive(handle.set_dtr, True) and self._drive(handle.set_rts, False)
        if applied:
            self.conn.lines.levels_set(True, False)
        self.conn.record("control", dtr=True, rts=False, source=SOURCE, applied=applied, esp_reset=True)

    def _set_rts(self, level: bool) -> None:
        self._rts = bool(level)
        self._line(self._drive(self.conn.handle.set_rts, self._rts), rts=self._rts)

    def _set_break(self, level: bool) -> None:
        self._break = bool(level)
        applied = self._drive(self.conn.handle.set_break, self._break)
        self.conn.record("break", on=self._break, source=SOURCE, applied=applied)

    dtr = property(lambda self: self._dtr, _set_dtr)
    rts = property(lambda self: self._rts, _set_rts)
    break_condition = property(lambda self: self._break, _set_break)

    # --- input lines (what the client is notified of) -------------------------------------------

    def _modem(self, name: str) -> bool:
        try:
            return bool(self.conn.handle.modem_lines().get(name))
        except Exception:  # a port without modem lines, or one that is going away
            return False

    cts = property(lambda self: self._modem("cts"))
    dsr = property(lambda self: self._modem("dsr"))
    ri = property(lambda self: self._modem("ri"))
    cd = property(lambda self: self._modem("cd"))

    # --- purges ---------------------------------------------------------------------------------

    def reset_input_buffer(self) -> None:
        """The client drops what it has not received yet: what is queued for it goes. The bytes stay
        in the ring (every cursor still reads them): the OS input is not purged."""
        if self._purge_pending is not None:
            self._purge_pending()

    def reset_output_buffer(self) -> None:
        if self.apply:
            try:
                self.conn.handle.reset_output()
            except Exception as exc:
                log.debug("rfc2217 mirror of %s: output not purged: %s", self.conn.id, exc)

    # --- the client leaves ----------------------------------------------------------------------

    def restore(self) -> None:
        """Put the connection's own settings back (and release a BREAK the client left on)."""
        handle = self.conn.handle
        if self._break:
            self._drive(handle.set_break, False)
        if self.apply and self.changed_settings and self.settings != self.conn.settings:
            handle.apply_settings(self.conn.settings)
            self.conn.record("config", settings=self.conn.settings.as_dict(), source=SOURCE, restored=True)
        self.settings = self.conn.settings
