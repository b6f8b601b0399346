"""A pyserial-like port over a serial-mcp ``PortHandle``, so esptool's own loader classes (``ESP32ROM``) and
its reset sequences drive a simulated board in-process: ``setDTR``/``setRTS`` reach the handle's
``set_dtr``/``set_rts`` at esptool's own timing, a baud-rate change reaches ``apply_settings``.

It names itself ``rfc2217://…`` so esptool picks its classic (sequential DTR/RTS) reset, the one an RFC 2217
client gets — the TIOCMSET "tight" reset needs a real tty. One reader thread moves what the device sends into
a buffer that ``read`` waits on (a condition variable, no polling); ``close`` ends it.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from serial_mcp.core.settings import SerialSettings
from serial_mcp.serial.handle import PortEOF, PortHandle


class HandlePort:
    def __init__(self, handle: PortHandle, baudrate: int = 115200) -> None:
        self.handle = handle
        self.port = self.name = "rfc2217://sim-esp32"
        self.timeout: float | None = 3.0
        self.write_timeout: float | None = None
        self._baudrate = baudrate
        self._dtr = True
        self._rts = True
        self._buf = bytearray()
        self._cond = threading.Condition()
        self._closed = False
        self._reader = threading.Thread(target=self._pump, name="esptool-port", daemon=True)
        self._reader.start()

    def _pump(self) -> None:
        while not self._closed:
            try:
                data = self.handle.read_chunk()
            except (OSError, PortEOF):
                return
            if data:
                with self._cond:
                    self._buf += data
                    self._cond.notify_all()

    # --- what esptool calls -----------------------------------------------------------------------------

    @property
    def baudrate(self) -> int:
        return self._baudrate

    @baudrate.setter
    def baudrate(self, value: int) -> None:
        self._baudrate = value
        self.handle.apply_settings(SerialSettings(baud_rate=value))

    @property
    def dtr(self) -> bool:
        return self._dtr

    @property
    def rts(self) -> bool:
        return self._rts

    def setDTR(self, level: bool) -> None:
        self._dtr = level
        self.handle.set_dtr(level)

    def setRTS(self, level: bool) -> None:
        self._rts = level
        self.handle.set_rts(level)

    def read(self, size: int = 1) -> bytes:
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        with self._cond:
            while len(self._buf) < size:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                self._cond.wait(left)
            out = bytes(self._buf[:size])
            del self._buf[:size]
            return out

    def read_until(self, marker: bytes, timeout: float = 5.0) -> bytes:
        """Everything up to and including ``marker`` (or what came within ``timeout``, without it)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while marker not in self._buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    out = bytes(self._buf)
                    self._buf.clear()
                    return out
                self._cond.wait(left)
            end = self._buf.index(marker) + len(marker)
            out = bytes(self._buf[:end])
            del self._buf[:end]
            return out

    def inWaiting(self) -> int:
        with self._cond:
            return len(self._buf)

    @property
    def in_waiting(self) -> int:
        return self.inWaiting()

    def write(self, data: bytes) -> int:
        return self.handle.write(bytes(data))

    def flushInput(self) -> None:
        with self._cond:
            self._buf.clear()

    reset_input_buffer = flushInput

    def flushOutput(self) -> None:
        pass

    reset_output_buffer = flushOutput

    def isOpen(self) -> bool:
        return not self._closed

    is_open = property(isOpen)

    def open(self) -> None:
        pass

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.handle.interrupt()
        self._reader.join(2)

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"HandlePort has no {name!r} (esptool asked for it)")
