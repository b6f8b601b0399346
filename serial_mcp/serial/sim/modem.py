"""``sim://modem`` and ``sim://echo``: the two simulated devices without a clock.

``sim://modem`` behaves like a small AT-command modem: echo off, ``AT`` → ``OK``, ``ATI`` → identity,
``AT+CSQ`` → signal quality, ``AT+GMR`` → firmware, unknown commands → ``ERROR``; on open it prints
``SIM MODEM READY``. It answers what a modem's first session sends: ``ATE0``/``ATE1`` (echo off/on),
``ATZ`` and ``AT&F`` (back to the defaults: echo off, ``+CMEE`` 0), ``AT+CMEE=0|1|2``, ``AT+CMEE?`` and
``AT+CMEE=?``. ``sim://echo`` returns every byte written.
"""

from __future__ import annotations

from serial_mcp.core.settings import SerialSettings
from serial_mcp.serial.fake import MAX_COMMAND_LINE, FakeDevice, FakePortHandle
from serial_mcp.version import __version__

_MODEM_REPLIES = {
    b"AT": b"\r\nOK\r\n",
    b"ATI": b"\r\nserial-mcp simulated modem\r\nRevision: SIM " + __version__.encode() + b"\r\n\r\nOK\r\n",
    b"AT+GMR": b"\r\nSIM" + __version__.encode() + b"\r\n\r\nOK\r\n",
    b"AT+CSQ": b"\r\n+CSQ: 23,99\r\n\r\nOK\r\n",
    b"AT+CGMI": b"\r\nserial-mcp\r\n\r\nOK\r\n",
    b"AT+CPIN?": b"\r\n+CPIN: READY\r\n\r\nOK\r\n",
}


OK = b"\r\nOK\r\n"
ERROR = b"\r\nERROR\r\n"


class AtLines:
    """Echo and AT command lines: each CR- or LF-ended line goes to ``_command`` upper-cased and
    stripped. A line longer than the command buffer (``MAX_COMMAND_LINE``) is not kept: it goes as
    ``b""``, which no command matches (an ERROR)."""

    def __init__(self, echo: bool) -> None:
        self.echo = echo
        self._line = bytearray()
        self._overflow = False

    def _read(self, data: bytes, out: bytearray) -> None:
        for b in data:
            if self.echo:
                out.append(b)
            if b in (0x0D, 0x0A):
                cmd = bytes(self._line).strip().upper()
                self._line.clear()
                if self._overflow:
                    self._overflow = False
                    self._command(b"", out)
                elif cmd:
                    self._command(cmd, out)
            elif len(self._line) < MAX_COMMAND_LINE:
                self._line.append(b)
            else:
                self._overflow = True

    def _command(self, cmd: bytes, out: bytearray) -> None:
        raise NotImplementedError


class ModemResponder(AtLines):
    """Line-buffered AT interpreter: answers each command at once."""

    def __init__(self) -> None:
        super().__init__(echo=False)
        self.cmee = 0

    def answer(self, cmd: bytes) -> bytes:
        """The reply to one command (upper case, stripped); the settings commands change state."""
        if cmd in (b"ATZ", b"AT&F", b"ATZ0", b"AT&F0"):
            self.echo, self.cmee = False, 0
            return OK
        if cmd in (b"ATE", b"ATE0", b"ATE1"):
            self.echo = cmd == b"ATE1"
            return OK
        if cmd == b"AT+CMEE?":
            return b"\r\n+CMEE: %d\r\n" % self.cmee + OK
        if cmd == b"AT+CMEE=?":
            return b"\r\n+CMEE: (0-2)\r\n" + OK
        if cmd in (b"AT+CMEE=0", b"AT+CMEE=1", b"AT+CMEE=2"):
            self.cmee = cmd[-1] - 0x30
            return OK
        return _MODEM_REPLIES.get(cmd, ERROR)

    def _command(self, cmd: bytes, out: bytearray) -> None:
        out += self.answer(cmd)

    def __call__(self, data: bytes) -> bytes | None:
        out = bytearray()
        self._read(data, out)
        return bytes(out) or None


def open_modem(port: str, settings: SerialSettings) -> FakePortHandle:
    dev = FakeDevice(port, ModemResponder())
    dev.feed(b"\r\nSIM MODEM READY\r\n")
    return FakePortHandle(dev, settings)


def open_echo(port: str, settings: SerialSettings) -> FakePortHandle:
    return FakePortHandle(FakeDevice(port, lambda data: data), settings)
