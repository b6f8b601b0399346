"""Run a script on a MicroPython board and get stdout and stderr back separately, in one call.

The exchange mpremote uses (MicroPython's documented raw REPL): optionally Ctrl-C twice to stop a
running program, Ctrl-A to enter the raw REPL (``raw REPL; CTRL-B to exit\\r\\n>``), then raw-paste
mode (``\\x05A\\x01`` → ``R\\x01`` and a 16-bit window size; never more than the window in flight,
one more window per ``\\x01`` from the board) or, on a board without raw-paste, the plain raw REPL
(code, Ctrl-D, ``OK``). Output is ``stdout \\x04 stderr \\x04 >``. Ctrl-B returns to the friendly
REPL. The TX lock is held throughout, so nothing else is written into the exchange.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from serial_mcp import messages
from serial_mcp.errors import ErrorCode, SerialMcpError
from serial_mcp.serial import reader
from serial_mcp.serial.connection import Connection

WriteFn = Callable[[bytes], Awaitable[int]]
RAW_BANNER = b"raw REPL; CTRL-B to exit\r\n>"
ENTER_TIMEOUT_S = 2.0
MAX_OUTPUT = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ScriptOutcome:
    stdout: bytes
    stderr: bytes
    bytes_written: int
    mode: str  # "raw-paste" | "raw"
    mark_offset: int
    end_offset: int


class _Stream:
    """The board's bytes from ``pos`` on, read straight from the ring (no cursor moves)."""

    def __init__(self, conn: Connection, pos: int, deadline: float) -> None:
        self.conn = conn
        self.pos = pos
        self.deadline = deadline

    def _left_ms(self, cap_s: float | None = None) -> int:
        left = self.deadline - time.monotonic()
        if cap_s is not None:
            left = min(left, cap_s)
        return max(0, int(left * 1000))

    async def take(self, n: int, cap_s: float | None = None) -> bytes:
        req = reader.build_read_request(
            from_="now",
            timeout_ms=self._left_ms(cap_s),
            max_bytes=n,
            idle_ms=reader.MAX_TIMEOUT_MS,
            encoding="hex",
        )
        out = await reader.read(self.conn, req, start=self.pos)
        self.pos = out.next_offset
        return out.data

    async def until(self, marker: bytes, cap_s: float | None = None) -> bytes:
        """Bytes up to and including ``marker``; raises ``timeout`` when it does not come."""
        req = reader.build_read_request(
            from_="now",
            timeout_ms=self._left_ms(cap_s),
            max_bytes=MAX_OUTPUT,
            match={"pattern": marker.hex(), "pattern_encoding": "hex"},
            encoding="hex",
        )
        out = await reader.read(self.conn, req, start=self.pos)
        self.pos = out.next_offset
        if out.stop_reason != "match":
            raise _Missing(out.data)
        return out.data


class _Missing(Exception):
    def __init__(self, got: bytes) -> None:
        super().__init__(got)
        self.got = got


async def run_script(
    conn: Connection, code: bytes, *, timeout_s: float, interrupt: bool, write: WriteFn
) -> ScriptOutcome:
    """Run ``code``; ``write`` sends bytes with the TX lock already held by the caller."""
    deadline = time.monotonic() + timeout_s
    mark = conn.snapshot().end_offset
    stream = _Stream(conn, mark, deadline)
    sent = 0
    sent += await write(b"\r\x03\x03\x01" if interrupt else b"\r\x01")
    try:
        await stream.until(RAW_BANNER, ENTER_TIMEOUT_S)
    except _Missing as exc:
        raise SerialMcpError(
            ErrorCode.NOT_IN_REPL, messages.MPY_NO_RAW_REPL.format(got=_show(exc.got), hint=_hint(interrupt))
        ) from None
    sent += await write(b"\x05A\x01")
    reply = await stream.take(2, ENTER_TIMEOUT_S)
    try:
        if reply == b"R\x01":
            mode = "raw-paste"
            sent += await _paste(stream, code, write)
        else:
            mode = "raw"
            if reply != b"R\x00":  # an old board echoed the command: resync on its raw prompt
                await stream.until(b">", ENTER_TIMEOUT_S)
            sent += await write(code + b"\x04")
            ok = await stream.take(2)
            if ok != b"OK":
                raise SerialMcpError(ErrorCode.MPY_FAILED, messages.MPY_NOT_OK.format(got=_show(ok)))
        stdout = (await stream.until(b"\x04"))[:-1]
        stderr = (await stream.until(b"\x04"))[:-1]
        await stream.until(b">")
    except _Missing as exc:
        raise SerialMcpError(ErrorCode.TIMEOUT, messages.MPY_TIMEOUT.format(got=_show(exc.got))) from None
    finally:
        sent += await write(b"\x02")  # back to the friendly REPL, whatever happened
    return ScriptOutcome(stdout, stderr, sent, mode, mark, stream.pos)


async def _paste(stream: _Stream, code: bytes, write: WriteFn) -> int:
    """Raw-paste flow control: never more than the granted window in flight."""
    header = await stream.take(2)
    window = int.from_bytes(header, "little") if len(header) == 2 else 0
    if window <= 0:
        raise SerialMcpError(ErrorCode.MPY_FAILED, messages.MPY_NOT_OK.format(got=_show(header)))
    credit, i, sent = window, 0, 0
    while i < len(code):
        while credit == 0 or stream.conn.snapshot().end_offset > stream.pos:
            flow = await stream.take(1)
            if flow == b"\x01":
                credit += window
            elif flow == b"\x04":  # the board ended the paste (e.g. a syntax error): acknowledge
                sent += await write(b"\x04")
                return sent
            else:
                raise SerialMcpError(ErrorCode.MPY_FAILED, messages.MPY_NOT_OK.format(got=_show(flow)))
        piece = code[i : i + credit]
        sent += await write(piece)
        credit -= len(piece)
        i += len(piece)
    sent += await write(b"\x04")
    await stream.until(b"\x04")  # the board acknowledges the end of data
    return sent


def _show(data: bytes) -> str:
    text = data[-80:].decode("utf-8", "replace")
    return repr(text) if data else "nothing"


def _hint(interrupt: bool) -> str:
    return messages.MPY_HINT_INTERRUPT if not interrupt else messages.MPY_HINT_BOARD
