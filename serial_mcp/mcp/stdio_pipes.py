"""stdio on the event loop: the wire's lines read and written without a worker thread per message.

The SDK's stdio transport wraps stdin and stdout in ``anyio.wrap_file``: every line read and every
write and flush of a reply is a round trip to a worker thread — three per tool call, each two
thread wake-ups, the largest part of a small call's cost. When the descriptors are pipes or sockets
(how an MCP client runs a server), asyncio's own pipe transports serve them from the loop instead.
A terminal or a regular file keeps the SDK's threaded path: making a descriptor non-blocking
changes it for every process that shares it.

A line longer than ``MAX_LINE`` (the SDK's path had no limit: a hostile client could make it
buffer any amount) is not kept: its head comes through as an :class:`OverlongLine`, which the
request guard answers (with the request's id when the head holds it), and the rest of it is
skipped without being buffered. The reader pauses the pipe once ``PAUSE_AT`` bytes wait unread
(asyncio alone would read ahead 128 MB), so a flooding client is held back by the pipe itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import stat
from collections.abc import AsyncIterator, Iterable
from typing import Any, BinaryIO, SupportsIndex

import anyio

PIPE_SIZE = 1 << 20  # stdout's pipe buffer, if the system allows (the Linux default max)
MAX_LINE = 64 << 20  # one JSON-RPC line (a 32 MB write in hex)
# Read ahead of the server at most this much; asyncio's StreamReader alone pauses the pipe only at
# twice its line limit (128 MB): a client flooding requests made the server hold 128 MB of them.
PAUSE_AT = 1 << 20
HEAD_KEPT = 64 << 10  # of an overlong line: enough for its id, method and tool name


def is_pipe(fd: int) -> bool:
    """A pipe or a socket: safe to make non-blocking and to serve from the loop."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class OverlongLine(str):
    """The head of a line longer than ``limit`` bytes (the rest was skipped)."""

    limit: int

    def __new__(cls, head: str, limit: int) -> OverlongLine:
        line = super().__new__(cls, head)
        line.limit = limit
        return line


class PipeReader(asyncio.StreamReader):
    """A StreamReader that pauses its pipe once ``PAUSE_AT`` bytes wait unread, instead of at twice
    the line limit; a longer line still comes through (a read that needs more resumes the pipe).
    It uses StreamReader's own state (unchanged since Python 3.4), declared here for the checker."""

    _buffer: bytearray
    _paused: bool
    _transport: asyncio.ReadTransport | None

    def feed_data(self, data: Iterable[SupportsIndex]) -> None:
        super().feed_data(data)
        if self._transport is not None and not self._paused and len(self._buffer) > PAUSE_AT:
            try:
                self._transport.pause_reading()
            except NotImplementedError:
                self._transport = None
            else:
                self._paused = True

    def _maybe_resume_transport(self) -> None:
        if self._paused and len(self._buffer) <= PAUSE_AT and self._transport is not None:
            self._paused = False
            self._transport.resume_reading()


class PipeLines:
    """The lines of a pipe, as ``str`` (UTF-8, bad bytes replaced), read on the event loop."""

    def __init__(self, reader: asyncio.StreamReader, limit: int = MAX_LINE) -> None:
        self._reader = reader
        self._limit = limit

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        reader = self._reader
        while True:
            try:
                line = await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as end:  # end of input: a last line without LF
                if end.partial:
                    yield end.partial.decode("utf-8", errors="replace")
                return
            except asyncio.LimitOverrunError as over:
                head = await reader.readexactly(min(over.consumed, HEAD_KEPT, self._limit))
                await self._skip_rest_of_line()
                yield OverlongLine(head.decode("utf-8", errors="replace"), self._limit)
                continue
            yield line.decode("utf-8", errors="replace")

    async def _skip_rest_of_line(self) -> None:
        """Drop everything up to and including the next LF, never buffering more than the limit."""
        reader = self._reader
        while True:
            try:
                await reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as over:
                await reader.readexactly(max(1, over.consumed))
            except asyncio.IncompleteReadError:
                return


class WatchedPipe(asyncio.streams.FlowControlMixin):
    """The stdout pipe's protocol: ``gone`` is set once the client closed its end (asyncio's pipe
    transport watches the read end even while nothing is being written)."""

    def __init__(self) -> None:
        super().__init__()
        self.gone = asyncio.Event()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self.gone.set()


class PipeWriter:
    """``write`` + ``flush`` as the SDK's stdout writer calls them; a write returns once the pipe took
    the bytes (``drain``), so a client that stops reading holds back only its own replies."""

    def __init__(self, writer: asyncio.StreamWriter, pipe: WatchedPipe | None = None) -> None:
        self._writer = writer
        self._pipe = pipe
        self._widened = False

    def widen(self) -> None:
        """Before the first big reply: a wider pipe (widen_pipe). Not from the start: a client that
        floods without reading is held back by the default pipe, as before (in_flight's bound)."""
        if not self._widened:
            self._widened = True
            fd = self._writer.get_extra_info("pipe")
            if fd is not None:
                widen_pipe(fd.fileno())

    async def gone(self) -> None:
        """Return once nobody can read what we write: the client closed our stdout."""
        if self._pipe is None:
            await asyncio.Event().wait()  # not watched: never known to be gone
        else:
            await self._pipe.gone.wait()

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))
        await self._writer.drain()

    async def flush(self) -> None:
        await self._writer.drain()

    def close(self) -> None:
        self._writer.close()


def widen_pipe(fd: int) -> None:
    """Give the pipe PIPE_SIZE of room (Linux; best effort): a 9 MB reply then crosses in ~9 turns
    of both processes instead of ~140, and the replies queued behind it wait that much less."""
    setsize = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setsize is None:
        return
    with contextlib.suppress(OSError):  # a socket, or over the user's pipe quota: keep the default
        fcntl.fcntl(fd, setsize, PIPE_SIZE)


@contextlib.asynccontextmanager
async def loop_stdio(
    stdin: BinaryIO, stdout: BinaryIO, limit: int = MAX_LINE
) -> AsyncIterator[tuple[PipeLines, PipeWriter] | None]:
    """Loop-served ``(lines, writer)`` over the claimed stdin/stdout buffers, or None when either is not
    a pipe or socket (then the caller keeps the threaded path). The descriptors themselves stay open
    and blocking again afterwards: the transports own duplicates."""
    try:
        fds = (stdin.fileno(), stdout.fileno())
    except (AttributeError, OSError, ValueError):  # an in-memory stream: no descriptor to serve
        fds = (-1, -1)
    if not all(is_pipe(fd) for fd in fds):
        yield None
        return
    loop = asyncio.get_running_loop()
    transports: list[Any] = []
    try:
        reader = PipeReader(limit=limit)
        read_t, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(os.dup(fds[0]), "rb", buffering=0)
        )
        transports.append(read_t)
        write_t, write_p = await loop.connect_write_pipe(
            WatchedPipe, os.fdopen(os.dup(fds[1]), "wb", buffering=0)
        )
        transports.append(write_t)
        writer = asyncio.StreamWriter(write_t, write_p, None, loop)
        yield PipeLines(reader, limit), PipeWriter(writer, write_p)
    finally:
        for t in transports:
            t.close()
        with anyio.CancelScope(shield=True):
            await anyio.sleep(0)  # the transports let their duplicates go on the next loop turn
        for fd in fds:  # O_NONBLOCK is shared by every descriptor of the pipe: undo it
            with contextlib.suppress(OSError):
                os.set_blocking(fd, True)
