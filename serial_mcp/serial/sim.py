"""Built-in simulated devices (``sim://modem``, ``sim://echo``): try serial-mcp with no hardware attached.

``sim://modem`` behaves like a small AT-command modem: echo off, ``AT`` → ``OK``, ``ATI`` → identity,
``AT+CSQ`` → signal quality, ``AT+GMR`` → firmware, unknown commands → ``ERROR``. ``sim://echo``
returns every byte written. Devices with a clock live in their own modules: ``sim://micropython``
(sim_micropython), ``sim://slow-modem`` (sim_slow_modem), ``sim://reboot-board`` (sim_reboot_board),
``sim://esp32-rom`` (sim_esp32_rom); each is imported when such a port is first opened, not at
start-up.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from serial_mcp import messages
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import ErrorCode, SerialMcpError
from serial_mcp.serial.fake import MAX_COMMAND_LINE, FakeDevice, FakePortHandle
from serial_mcp.version import __version__

# kind -> (module, its opener): ``opener(port, settings)`` gives the port's handle
TIMED_KINDS = {
    "micropython": ("serial_mcp.serial.sim_micropython", "open_micropython"),
    "slow-modem": ("serial_mcp.serial.sim_slow_modem", "open_slow_modem"),
    "reboot-board": ("serial_mcp.serial.sim_reboot_board", "open_reboot_board"),
    "esp32-rom": ("serial_mcp.serial.sim_esp32_rom", "open_esp32_rom"),
}


def timed_opener(kind: str) -> Callable[[str, SerialSettings], FakePortHandle]:
    """The opener of a ``TIMED_KINDS`` device, its module imported now (once)."""
    module, name = TIMED_KINDS[kind]
    opener: Callable[[str, SerialSettings], FakePortHandle] = getattr(importlib.import_module(module), name)
    return opener

_MODEM_REPLIES = {
    b"AT": b"\r\nOK\r\n",
    b"ATI": b"\r\nserial-mcp simulated modem\r\nRevision: SIM " + __version__.encode() + b"\r\n\r\nOK\r\n",
    b"AT+GMR": b"\r\nSIM" + __version__.encode() + b"\r\n\r\nOK\r\n",
    b"AT+CSQ": b"\r\n+CSQ: 23,99\r\n\r\nOK\r\n",
    b"AT+CGMI": b"\r\nserial-mcp\r\n\r\nOK\r\n",
    b"AT+CPIN?": b"\r\n+CPIN: READY\r\n\r\nOK\r\n",
}


class ModemResponder:
    """Line-buffered AT interpreter: answers each CR-terminated command. A line longer than the
    command buffer (``MAX_COMMAND_LINE``) is not kept: it is answered ERROR when it ends."""

    def __init__(self) -> None:
        self._line = bytearray()
        self._overflow = False

    def __call__(self, data: bytes) -> bytes | None:
        out = bytearray()
        for b in data:
            if b in (0x0D, 0x0A):
                cmd = bytes(self._line).strip().upper()
                self._line.clear()
                if self._overflow:
                    self._overflow = False
                    out += b"\r\nERROR\r\n"
                elif cmd:
                    out += _MODEM_REPLIES.get(cmd, b"\r\nERROR\r\n")
            elif len(self._line) < MAX_COMMAND_LINE:
                self._line.append(b)
            else:
                self._overflow = True
        return bytes(out) or None


class SimOpener:
    """Opens ``sim://modem``, ``sim://echo`` and the ``TIMED_KINDS`` (options after ``?``)."""

    KINDS = ("modem", "echo", *TIMED_KINDS)

    def open(self, port: str, settings: SerialSettings) -> FakePortHandle:
        kind = port.removeprefix("sim://").partition("?")[0].strip("/")
        if kind in TIMED_KINDS:
            return timed_opener(kind)(port, settings)
        if kind == "modem":
            dev = FakeDevice(port, ModemResponder())
            dev.feed(b"\r\nSIM MODEM READY\r\n")
        elif kind == "echo":
            dev = FakeDevice(port, lambda data: data)
        else:
            raise SerialMcpError(
                ErrorCode.PORT_NOT_FOUND, messages.SIM_UNKNOWN.format(port=port, kinds=", ".join(self.KINDS))
            )
        return FakePortHandle(dev, settings)
