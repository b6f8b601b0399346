"""FakeOpener: in-memory scripted devices for unit tests (no OS, no threads of its own).

``FakeDevice.feed`` plays bytes into the port, ``responder`` answers writes, ``unplug`` makes the
next read fail like a vanished USB adapter, ``present = False`` makes opening fail. DTR/RTS/BREAK
changes are recorded with timestamps and ``on_line`` can react to them (e.g. play a boot banner the
moment reset is released). Reads block on a condition variable, not a poll loop.

The ``sim://`` devices are ``FakeDevice``s too, on a server that may run for weeks: a device keeps
only the last ``keep_bytes`` of what was written (and the last ``KEEP_EVENTS`` writes, line changes
and settings), so 80 MB written costs a bounded tail, not 80 MB. ``FakeOpener``'s devices, which
tests look into, keep everything (``keep_bytes=None``). A simulated command line (``MAX_COMMAND_LINE``)
is bounded the same way: a line that never ends cannot grow without end.
"""

from __future__ import annotations

import errno
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import ErrorCode, PortError
from serial_mcp.serial.handle import PortEOF

KEEP_BYTES: Final = 64 * 1024  # of what was written, a simulated device keeps this much (the tail)
KEEP_EVENTS: Final = 1024  # and this many of its writes, line changes and settings
MAX_COMMAND_LINE: Final = 4096  # a simulated console's line buffer: longer lines are cut (and refused)


def _trim(items: list[Any], keep: int) -> None:
    """Keep the last ``keep`` items; trimmed at twice that, so each append costs O(1) on average."""
    if len(items) > 2 * keep:
        del items[: len(items) - keep]


@dataclass
class FakeDevice:
    """One simulated device: what the host wrote, what it will read, and its line state.
    ``keep_bytes``: how much of what was written it keeps (None: all of it)."""

    name: str
    responder: Callable[[bytes], bytes | None] | None = None
    written: bytearray = field(default_factory=bytearray)
    writes: list[bytes] = field(default_factory=list)  # each write call, to check pacing and atomicity
    settings_history: list[SerialSettings] = field(default_factory=list)
    modem: dict[str, bool | None] = field(
        default_factory=lambda: {"cts": None, "dsr": None, "ri": None, "cd": None}
    )
    lines: dict[str, bool] = field(default_factory=lambda: {"dtr": True, "rts": True, "break": False})
    line_events: list[tuple[float, str, bool]] = field(default_factory=list)
    on_line: Callable[[FakeDevice, str, bool], None] | None = None
    present: bool = True
    opens: int = 0
    keep_bytes: int | None = KEEP_BYTES
    _pending: bytearray = field(default_factory=bytearray)
    _cond: threading.Condition = field(default_factory=threading.Condition)
    _failure: BaseException | None = None
    _interrupted: bool = False
    closed: bool = False
    _writes_held: int = 0  # bytes in ``writes``

    def feed(self, data: bytes) -> None:
        """Make ``data`` readable by the host."""
        with self._cond:
            self._pending += data
            self._cond.notify_all()

    def unplug(self, eof: bool = False, *, gone: bool = True) -> None:
        """The next read fails: EIO (default) or an orderly EOF; ``gone`` also makes reopening fail."""
        with self._cond:
            self._failure = PortEOF("fake EOF") if eof else OSError(errno.EIO, "Input/output error")
            if gone:
                self.present = False
            self._cond.notify_all()

    def plug_in(self) -> None:
        """The device is back: the next open succeeds and reads work again."""
        with self._cond:
            self.present = True
            self._failure = None
            self._cond.notify_all()

    def keep_write(self, data: bytes) -> None:
        """Remember a write: all of it, or (bounded) the tail of the bytes and of the writes."""
        keep = self.keep_bytes
        if keep is None:
            self.written += data
            self.writes.append(bytes(data))
            return
        tail = bytes(data[-keep:]) if keep else b""
        self.written += tail
        if len(self.written) > 2 * keep:
            del self.written[: len(self.written) - keep]
        self.writes.append(tail)
        self._writes_held += len(tail)
        if self._writes_held > 2 * keep or len(self.writes) > 2 * KEEP_EVENTS:
            held, first = 0, len(self.writes)  # the newest writes that fit both bounds stay
            while first and len(self.writes) - first < KEEP_EVENTS:
                if held + len(self.writes[first - 1]) > keep:
                    break
                first -= 1
                held += len(self.writes[first])
            del self.writes[:first]
            self._writes_held = held

    def keep_settings(self, settings: SerialSettings) -> None:
        self.settings_history.append(settings)
        if self.keep_bytes is not None:
            _trim(self.settings_history, KEEP_EVENTS)

    def _set_line(self, name: str, level: bool) -> None:
        self.lines[name] = level
        self.line_events.append((time.monotonic(), name, level))
        if self.keep_bytes is not None:
            _trim(self.line_events, KEEP_EVENTS)
        if self.on_line is not None:
            self.on_line(self, name, level)


class FakePortHandle:
    """The host side of a ``FakeDevice``."""

    def __init__(self, device: FakeDevice, settings: SerialSettings) -> None:
        self.name = device.name
        self.device = device
        device.keep_settings(settings)
        device._interrupted = False
        device.opens += 1

    def read_chunk(self) -> bytes:
        dev = self.device
        with dev._cond:
            dev._cond.wait_for(lambda: dev._pending or dev._failure or dev._interrupted)
            if dev._interrupted:
                dev._interrupted = False
                return b""
            if dev._pending:
                data = bytes(dev._pending)
                dev._pending.clear()
                return data
            assert dev._failure is not None
            raise dev._failure

    def interrupt(self) -> None:
        with self.device._cond:
            self.device._interrupted = True
            self.device._cond.notify_all()

    def write(self, data: bytes) -> int:
        dev = self.device
        if dev._failure is not None:
            raise OSError(errno.EIO, "Input/output error")
        dev.keep_write(data)
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
        self.device.keep_settings(settings)

    def set_dtr(self, level: bool) -> None:
        self.device._set_line("dtr", level)

    def set_rts(self, level: bool) -> None:
        self.device._set_line("rts", level)

    def set_break(self, level: bool) -> None:
        self.device._set_line("break", level)

    def modem_lines(self) -> dict[str, bool | None]:
        return dict(self.device.modem)

    def close(self) -> None:
        self.device.closed = True


class FakeOpener:
    """Opens ``FakeDevice``s by name; unknown names fail like a missing device."""

    def __init__(self) -> None:
        self.devices: dict[str, FakeDevice] = {}

    def add(self, name: str, responder: Callable[[bytes], bytes | None] | None = None) -> FakeDevice:
        dev = FakeDevice(name, responder, keep_bytes=None)  # a test's device: it keeps every byte
        self.devices[name] = dev
        return dev

    def open(self, port: str, settings: SerialSettings) -> FakePortHandle:
        dev = self.devices.get(port)
        if dev is None or not dev.present:
            raise PortError(ErrorCode.PORT_NOT_FOUND, f"fake port {port!r} does not exist")
        dev.closed = False
        return FakePortHandle(dev, settings)
