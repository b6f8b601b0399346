"""``replay://`` for pyserial (found by ``serial_for_url`` once ``register()`` has run).

A thin ``SerialBase`` over ``ReplayPortHandle``, modelled on pyserial's ``loop://`` handler: reads
honour pyserial's ``timeout`` (None blocks, 0 polls), ``cancel_read`` wakes a blocked read, and
settings and line changes are accepted and recorded on the handle (``Serial.replay``).
"""

from __future__ import annotations

import time
from typing import Any

from serial.serialutil import PortNotOpenError, SerialBase, SerialException, to_bytes

from serial_mcp import pyserial_replay
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import SerialMcpError
from serial_mcp.serial.replay import ReplayOpener, ReplayPortHandle, parse_replay_url


class Serial(SerialBase):  # type: ignore[misc]  # pyserial ships no type information
    """A capture file played as a pyserial port."""

    is_open: bool

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.replay: ReplayPortHandle | None = None
        self._buffer = bytearray()
        super().__init__(*args, **kwargs)

    def open(self) -> None:
        if self.is_open:
            raise SerialException("Port is already open.")
        if self._port is None:
            raise SerialException("Port must be configured before it can be used.")
        try:
            spec = parse_replay_url(self._port)
            capture = ReplayOpener(pyserial_replay.captures_dir).load(spec)
        except SerialMcpError as exc:
            raise SerialException(str(exc)) from exc
        self.replay = ReplayPortHandle(self._port, capture, spec, self._settings())
        self._buffer.clear()
        self.is_open = True

    def close(self) -> None:
        if self.replay is not None:
            self.replay.close()
        self.is_open = False

    def _handle(self) -> ReplayPortHandle:
        if not self.is_open or self.replay is None:
            raise PortNotOpenError()
        return self.replay

    def _settings(self) -> SerialSettings:
        flow = "hardware" if self._rtscts else "software" if self._xonxoff else "none"
        try:
            return SerialSettings().updated(
                baud_rate=self._baudrate,
                data_bits=self._bytesize,
                parity=self._parity,
                stop_bits=self._stopbits,
                flow_control=flow,
            )
        except SerialMcpError:
            return SerialSettings()  # a replay has no UART to reject odd settings

    def _reconfigure_port(self, *args: Any) -> None:
        if self.replay is not None:
            self.replay.apply_settings(self._settings())

    @property
    def in_waiting(self) -> int:
        return len(self._buffer) + self._handle().due_bytes()

    def read(self, size: int = 1) -> bytes:
        """Up to ``size`` bytes, waiting as pyserial's ``timeout`` says (None: until ``size`` arrive)."""
        handle = self._handle()
        deadline = None if self._timeout is None else time.monotonic() + self._timeout
        while len(self._buffer) < size:
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            chunk = handle.read_due(left)
            if not chunk:
                break  # timeout, cancel_read or close
            self._buffer += chunk
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data

    def cancel_read(self) -> None:
        if self.replay is not None:
            self.replay.interrupt()

    def write(self, data: Any) -> int:
        return self._handle().write(to_bytes(data))

    def flush(self) -> None:
        self._handle()

    def reset_input_buffer(self) -> None:
        self._buffer.clear()
        self._handle().reset_input()

    def reset_output_buffer(self) -> None:
        self._handle().reset_output()

    @property
    def out_waiting(self) -> int:
        return 0

    def _update_break_state(self) -> None:
        self._handle().set_break(bool(self._break_state))

    def _update_rts_state(self) -> None:
        if self.replay is not None:
            self.replay.set_rts(bool(self._rts_state))

    def _update_dtr_state(self) -> None:
        if self.replay is not None:
            self.replay.set_dtr(bool(self._dtr_state))

    def _input_line(self, level: bool) -> bool:
        self._handle()
        return level

    # A recording holds no input-line states: report a present, ready device.
    cts = dsr = cd = property(lambda self: self._input_line(True))
    ri = property(lambda self: self._input_line(False))
