"""``sim://slow-modem``: an AT modem that takes its time, as real cellular modules do.

Echo is on (``ATE0`` / ``ATE1``): every typed byte comes back at once, then the reply follows in parts,
20–150 ms apart — longer than a 100 ms idle gap for ``ATI`` (its information text comes 150 ms after the
echo), ``AT+CGSN`` (``OK`` 110 ms after the IMEI) and ``AT+CSQ``, whose reply has an unsolicited ``+CREG:
1`` between the ``+CSQ`` line and ``OK``. The timings are fixed (not random) so a test sees the same stream
every time.

Commands: ``AT``, ``ATI`` (identity), ``AT+CGSN`` (IMEI), ``AT+CCID`` (SIM ICCID), ``AT+CSQ`` (signal),
``AT+CREG?``, ``AT+CGMR``, ``ATE0``/``ATE1``; anything else is ``ERROR``. On open it prints ``RDY``.
"""

from __future__ import annotations

import functools
import threading

from serial_mcp.core.settings import SerialSettings
from serial_mcp.serial.fake import FakeDevice
from serial_mcp.serial.sim.modem import AtLines
from serial_mcp.serial.sim.timeline import TimedPortHandle, Timeline

IMEI = "867530912345678"
ICCID = "89860012345678901234"
URC = b"\r\n+CREG: 1\r\n"

# command -> the reply's parts, each (milliseconds after the previous part, bytes)
REPLIES: dict[bytes, tuple[tuple[int, bytes], ...]] = {
    b"AT": ((20, b"\r\nOK\r\n"),),
    b"ATI": (
        (150, b"\r\nserial-mcp slow modem\r\nModel: SM-150\r\nRevision: SM150R01A01\r\n"),
        (20, b"\r\nOK\r\n"),
    ),
    b"AT+CGMR": ((40, b"\r\nSM150R01A01\r\n"), (30, b"\r\nOK\r\n")),
    b"AT+CGSN": ((40, b"\r\n" + IMEI.encode() + b"\r\n"), (110, b"\r\nOK\r\n")),
    b"AT+CCID": ((130, b"\r\n+CCID: " + ICCID.encode() + b"\r\n"), (10, b"\r\nOK\r\n")),
    b"AT+CSQ": ((60, b"\r\n+CSQ: 23,99\r\n"), (50, URC), (100, b"\r\nOK\r\n")),
    b"AT+CREG?": ((30, b"\r\n+CREG: 0,1\r\n"), (20, b"\r\nOK\r\n")),
}
ERROR_REPLY = ((30, b"\r\nERROR\r\n"),)
READY = b"\r\nRDY\r\n"


class SlowModem(AtLines):
    """Line-buffered AT interpreter that echoes at once and answers later, on the port's timeline."""

    def __init__(self, device: FakeDevice, timeline: Timeline) -> None:
        super().__init__(echo=True)
        self.device = device
        self.timeline = timeline
        self._lock = threading.Lock()

    def __call__(self, data: bytes) -> bytes | None:
        echoed = bytearray()
        with self._lock:
            self._read(data, echoed)
        return bytes(echoed) or None

    def _command(self, cmd: bytes, out: bytearray) -> None:
        if cmd in (b"ATE0", b"ATE1"):
            self.echo = cmd == b"ATE1"
            parts: tuple[tuple[int, bytes], ...] = ((20, b"\r\nOK\r\n"),)
        else:
            parts = REPLIES.get(cmd, ERROR_REPLY)
        at = 0.0
        for gap, chunk in parts:
            at += gap
            self.timeline.after(at, functools.partial(self.device.feed, chunk))


def open_slow_modem(port: str, settings: SerialSettings) -> TimedPortHandle:
    timeline = Timeline(port)
    device = FakeDevice(port)
    device.responder = SlowModem(device, timeline)
    device.feed(READY)
    return TimedPortHandle(device, settings, timeline)
