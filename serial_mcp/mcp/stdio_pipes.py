"""stdio on the event loop: the wire's lines read and written without a worker thread per message.

The SDK's stdio transport wraps stdin and stdout in ``anyio.wrap_file``: every line read and every
write and flush of a reply is a round trip to a worker thread — three per tool call, each two
thread wake-ups, the largest part of a small call's cost. When the descriptors are pipes or sockets
(how an MCP client runs a server), asyncio's own pipe transports serve them from the loop instead.
A terminal or a regular file keeps the SDK's threaded path: making a descriptor non-blocking
changes it for every process that shares it.

The read side has no line-length limit of its own beyond ``MAX_LINE`` (the SDK's path had none):
a request too large to be real is answered by the request guard, not by a dropped connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import AsyncIterator
from typing import Any, BinaryIO

import anyio

MAX_LINE = 1 << 30  # one JSON-RPC line; StreamReader pauses the pipe at twice this buffered


def is_pipe(fd: int) -> bool:
    """A pipe or a socket: safe to make non-blocking and to serve from the loop."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class PipeLines:
    """The lines of a pipe, as ``str`` (UTF-8, bad bytes replaced), read on the event loop."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        while True:
            line = await self._reader.readline()
            if not line:
                return
            yield line.decode("utf-8", errors="replace")


class PipeWriter:
    """``write`` + ``flush`` as the SDK's stdout writer calls them; a write returns once the pipe took
    the bytes (``drain``), so a client that stops reading holds back only its own replies."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))
        await self._writer.drain()

    async def flush(self) -> None:
        await self._writer.drain()

    def close(self) -> None:
        self._writer.close()


@contextlib.asynccontextmanager
async def loop_stdio(stdin: BinaryIO, stdout: BinaryIO) -> AsyncIterator[tuple[PipeLines, PipeWriter] | None]:
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
        reader = asyncio.StreamReader(limit=MAX_LINE)
        read_t, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(os.dup(fds[0]), "rb", buffering=0)
        )
        transports.append(read_t)
        write_t, write_p = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(os.dup(fds[1]), "wb", buffering=0)
        )
        transports.append(write_t)
        writer = asyncio.StreamWriter(write_t, write_p, None, loop)
        yield PipeLines(reader), PipeWriter(writer)
    finally:
        for t in transports:
            t.close()
        with anyio.CancelScope(shield=True):
            await anyio.sleep(0)  # the transports let their duplicates go on the next loop turn
        for fd in fds:  # O_NONBLOCK is shared by every descriptor of the pipe: undo it
            with contextlib.suppress(OSError):
                os.set_blocking(fd, True)
