"""What a ``transact`` waits for when the call names no stop (issue 37.5): the reply, not a pause.

A call with ``match``, ``until``, an explicit ``idle_ms`` or a final-aware parser (AT, grbl, a shell
prompt, a REPL, Modbus RTU) ends where it says. Without any of them the reply ends:

- for an AT command (a line starting ``AT``) read raw, on the final result code (``OK``, ``ERROR``,
  ``+CME ERROR: …``, ``NO CARRIER`` …: the at_command parser's finals), ``stop_reason`` ``final``;
- for a packet protocol (SLIP, COBS, length-prefixed, start/end, binary frames: one request, one reply
  frame), on the first frame that is not the echo, ``stop_reason`` ``final``;
- otherwise once the line has been quiet ``REPLY_QUIET_MS`` after a byte that is not the echo of what
  was sent (a device that echoes is not done when the echo is back), ``stop_reason`` ``idle``.

A plain ``read`` keeps its short ``DEFAULT_IDLE_MS``: it takes what is there.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from serial_mcp.core.parsers.at_command import AtCommandParser

if TYPE_CHECKING:
    from serial_mcp.serial.connection import Connection

__all__ = ["REPLY_QUIET_MS", "ReplyWatch", "is_at_command"]

REPLY_QUIET_MS: Final = 500  # a real device's pause inside a reply (a modem's 150 ms) is well under this
_LINE_END: Final = re.compile(rb"[\r\n]")


def is_at_command(sent: bytes) -> bool:
    """A command line to an AT modem: ``AT…`` (any case) ending in CR or LF."""
    return sent.lstrip()[:2].upper() == b"AT" and sent[-1:] in (b"\r", b"\n")


class ReplyWatch:
    """Follows one transact's reply as it comes: where the echo of what was sent ends, and (for an AT
    command) where the final result code line ends."""

    __slots__ = ("_checked", "_line_pos", "_parser", "_scanned", "began", "echo", "sent")

    def __init__(self, sent: bytes) -> None:
        self.sent = sent
        self.began = False  # a byte that is not the echo has arrived
        self.echo: int | None = None  # bytes of echo the reply starts with: 0, len(sent), None: not known yet
        self._checked = 0  # bytes of the echo compared so far
        self._parser = AtCommandParser() if is_at_command(sent) else None
        self._line_pos = 0  # where the next complete line to classify starts
        self._scanned = 0  # no line end before this (past _line_pos)

    def see(self, data: bytes | bytearray) -> bool:
        """``data`` is the reply so far (from the mark): whether it holds more than the echo. Only
        the bytes not compared before are looked at."""
        if self.began:
            return True
        n = min(len(data), len(self.sent))
        if data[self._checked : n] != self.sent[self._checked : n]:
            self.began, self.echo = True, 0  # not an echo: any byte is the reply
        else:
            self._checked = n
            self.began = len(data) > len(self.sent)
            if n == len(self.sent):
                self.echo = n
        return self.began

    def see_ring(self, conn: Connection, start: int, end: int) -> bool:
        """``see`` for a framed read, which holds frames, not bytes: the first bytes from ``start``."""
        if self.began:
            return True
        upto = min(end, start + len(self.sent) + 1)
        head = conn.read_ring(start, upto - start).data if upto > start else b""
        return self.see(head)

    def is_reply_frame(self, conn: Connection, start: int, frame_start: int, frame_end: int) -> bool:
        """Whether the frame at ``[frame_start, frame_end)`` of a reply read from ``start`` is the
        reply, not (part of) the echo of what was sent."""
        self.see_ring(conn, start, frame_end)
        return self.echo is not None and frame_start >= start + self.echo

    def final_end(self, data: bytes | bytearray) -> int | None:
        """For an AT command: the length of ``data`` up to the end of its final result code line
        (its line end included), or None while none has come. Each byte is scanned once."""
        parser = self._parser
        if parser is None:
            return None
        pos = self._line_pos
        look = max(pos, self._scanned)
        while (m := _LINE_END.search(data, look)) is not None:
            eol = m.start()
            nxt = eol + (2 if data[eol : eol + 2] == b"\r\n" else 1)
            line = bytes(data[pos:eol])
            pos = look = nxt
            if line.strip() and parser.parse(line).final:
                self._line_pos = self._scanned = nxt
                return nxt
        self._line_pos, self._scanned = pos, len(data)
        return None
