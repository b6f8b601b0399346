"""FakeOpener: in-memory scripted devices for unit tests (no OS, no threads of its own).

``FakeDevice.feed`` plays bytes into the port, ``responder`` answers writes, ``unplug`` makes the
next read fail like a vanished USB adapter. Reads block on a condition variable, not a poll loop.
"""

from __future__ import annotations

import errno
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import SerialMcpError
from serial_mcp.serial.handle import PortEOF


@dataclass
class FakeDevice:
    """One simulated device: what the host wrote, what it will read, and its line state."""

    name: str
    responder: Callable[[bytes], bytes | None] | None = None
    written: bytearray = field(default_factory=bytearray)
    settings_history: list[SerialSettings] = field(default_factory=list)
    modem: dict[str, bool | None] = field(
        default_factory=lambda: {"cts": None, "dsr": None, "ri": None, "cd": None}
    )
    _pending: bytearray = field(default_factory=bytearray)
    _cond: threading.Condition = field(default_factory=threading.Condition)
    _failure: BaseException | None = None
    _cancelled: bool = False
    closed: bool = False

    def feed(self, data: bytes) -> None:
        """Make ``data`` readable by the host."""
        with self._cond:
            self._pending += data
            self._cond.notify_all()

    def unplug(self, eof: bool = False) -> None:
        """The next read fails: EIO (default) or an orderly EOF."""
        with self._cond:
            self._failure = PortEOF("fake EOF") if eof else OSError(errno.EIO, "Input/output error")
            self._cond.notify_all()


class FakePortHandle:
    """The host side of a ``FakeDevice``."""

    def __init__(self, device: FakeDevice, settings: SerialSettings) -> None:
        self.name = device.name
        self.device = device
        device.settings_history.append(settings)
        device._cancelled = False

    def read_chunk(self) -> bytes:
        dev = self.device
        with dev._cond:
            dev._cond.wait_for(lambda: dev._pending or dev._failure or dev._cancelled)
            if dev._pending:
                data = bytes(dev._pending)
                dev._pending.clear()
                return data
            if dev._failure is not None:
                raise dev._failure
            return b""

    def cancel_read(self) -> None:
        with self.device._cond:
            self.device._cancelled = True
            self.device._cond.notify_all()

    def write(self, data: bytes) -> int:
        dev = self.device
        if dev._failure is not None:
            raise OSError(errno.EIO, "Input/output error")
        dev.written += data
        if dev.responder is not None:
            reply = dev.responder(bytes(data))
            if reply:
                dev.feed(reply)
        return len(data)

    def reset_input(self) -> None:
        with self.device._cond:
            self.device._pending.clear()

    def reset_output(self) -> None:
        pass

    def apply_settings(self, settings: SerialSettings) -> None:
        self.device.settings_history.append(settings)

    def modem_lines(self) -> dict[str, bool | None]:
        return dict(self.device.modem)

    def close(self) -> None:
        self.device.closed = True


class FakeOpener:
    """Opens ``FakeDevice``s by name; unknown names fail like a missing device."""

    def __init__(self) -> None:
        self.devices: dict[str, FakeDevice] = {}

    def add(self, name: str, responder: Callable[[bytes], bytes | None] | None = None) -> FakeDevice:
        dev = FakeDevice(name, responder)
        self.devices[name] = dev
        return dev

    def open(self, port: str, settings: SerialSettings) -> FakePortHandle:
        dev = self.devices.get(port)
        if dev is None:
            raise SerialMcpError("port_not_found", f"fake port {port!r} does not exist")
        dev.closed = False
        return FakePortHandle(dev, settings)
