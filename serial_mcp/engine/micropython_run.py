"""Run a script on a MicroPython board and get stdout and stderr back separately, in one call.

The exchange mpremote uses (MicroPython's documented raw REPL): optionally Ctrl-C twice to stop a
running program, Ctrl-A to enter the raw REPL (``raw REPL; CTRL-B to exit\\r\\n>``), then raw-paste
mode (``\\x05A\\x01`` → ``R\\x01`` and a 16-bit window size; never more than the window in flight,
one more window per ``\\x01`` from the board, read only once the window is spent) or, on a board
without raw-paste, the plain raw REPL (code, Ctrl-D, ``OK``). Output is ``stdout \\x04 stderr \\x04
>``. Ctrl-B returns to the friendly REPL. The TX lock is held throughout, so nothing else is
written into the exchange.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from serial_mcp import messages
from serial_mcp.errors import DeviceError, ErrorCode, OperationTimeout
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

    def check_deadline(self) -> None:
        """The script's time is up: ``timeout`` (what was heard last is in the message)."""
        if time.monotonic() >= self.deadline:
            raise _Missing(self.conn.read_ring(max(self.pos - 80, 0), 80).data, "timeout")

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
            raise _Missing(out.data, out.stop_reason)
        return out.data


class _Missing(Exception):
    """The board did not send what the protocol expects: ``why`` is the read's stop reason."""

    def __init__(self, got: bytes, why: str = "timeout") -> None:
        super().__init__(got)
        self.got = got
        self.why = why


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
        raise DeviceError(
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
                raise DeviceError(ErrorCode.MPY_FAILED, messages.MPY_NOT_OK.format(got=_show(ok)))
        stdout = (await stream.until(b"\x04"))[:-1]
        stderr = (await stream.until(b"\x04"))[:-1]
        await stream.until(b">")
    except _Missing as exc:
        if exc.why != "timeout":  # e.g. 4 MiB of credit or output with no end marker in it
            text = messages.MPY_NO_END.format(why=exc.why, got=_show(exc.got), max=MAX_OUTPUT >> 20)
            raise DeviceError(ErrorCode.MPY_FAILED, text) from None
        raise OperationTimeout(ErrorCode.TIMEOUT, messages.MPY_TIMEOUT.format(got=_show(exc.got))) from None
    finally:
        sent += await write(b"\x02")  # back to the friendly REPL, whatever happened
    return ScriptOutcome(stdout, stderr, sent, mode, mark, stream.pos)


async def _paste(stream: _Stream, code: bytes, write: WriteFn) -> int:
    """Raw-paste flow control: never more than the granted window in flight.

    Flow-control bytes are read only when the credit is spent (a board granting credit without end
    cannot keep the host reading), the deadline is checked on every turn and each turn yields, so a
    board at any pace costs the event loop one short step at a time. Credit that piled up is
    skipped with the end-of-data acknowledgement (``until(b"\\x04")``)."""
    header = await stream.take(2)
    window = int.from_bytes(header, "little") if len(header) == 2 else 0
    if window <= 0:
        raise DeviceError(ErrorCode.MPY_FAILED, messages.MPY_NOT_OK.format(got=_show(header)))
    credit, i, sent = window, 0, 0
    while i < len(code):
        while credit == 0:
            stream.check_deadline()
            flow = await stream.take(1)
            if not flow:
                raise _Missing(flow, "timeout")
            if flow == b"\x01":
                credit += window
            elif flow == b"\x04":  # the board ended the paste (e.g. a syntax error): acknowledge
                sent += await write(b"\x04")
                return sent
            else:
                raise DeviceError(ErrorCode.MPY_FAILED, messages.MPY_NOT_OK.format(got=_show(flow)))
        stream.check_deadline()
        piece = code[i : i + credit]
        sent += await write(piece)
        credit -= len(piece)
        i += len(piece)
        await asyncio.sleep(0)  # a board granting one byte at a time: one step per turn
    sent += await write(b"\x04")
    await stream.until(b"\x04")  # the board acknowledges the end of data
    return sent


def _show(data: bytes) -> str:
    text = data[-80:].decode("utf-8", "replace")
    return repr(text) if data else "nothing"


def _hint(interrupt: bool) -> str:
    return messages.MPY_HINT_INTERRUPT if not interrupt else messages.MPY_HINT_BOARD
