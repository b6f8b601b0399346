"""The in-process parts of ``bench_transact.py``'s round trip, one timed sample per request.

Run by ``bench_transact.py`` as a subprocess, so its samples interleave call by call with the stdio
series (same minutes, same cold caches) while the devices stay in the bench's process, as they do
for the stdio servers. Arguments: three PTY slave paths. Each line on stdin names one sample; the
answer on stdout is its duration in seconds:

* ``engine``: ``transact("AT\\r", match="OK")`` through ``serial_mcp.Engine`` (the Python API,
  the same operation the MCP tool calls): pump thread, ring, cursor, matching, the typed result;
  no MCP, no JSON.
* ``chain``: the least a pump thread and an event loop can do: a thread blocked in ``select`` on the
  port reads the reply and wakes the loop with ``call_soon_threadsafe``, the loop's future resolves
  once ``OK`` arrived. The device round trip every design with a reader thread pays here.
* ``direct``: the loop reads the port itself (``add_reader``), as the SDK floor's server does; no
  thread between the port and the caller.

    python bench/_transact_probe.py ENGINE_PTY CHAIN_PTY DIRECT_PTY
"""

from __future__ import annotations

import asyncio
import os
import select
import sys
import threading
import time
import tty
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import serial_mcp

REQUEST = b"AT\r"
REPLY_END = b"OK"


class ThreadChain:
    """A bare reader thread feeding an event loop: the floor of the pump design on this machine."""

    def __init__(self, path: str, loop: asyncio.AbstractEventLoop) -> None:
        self.fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
        tty.setraw(self.fd)
        self.loop = loop
        self.got = bytearray()
        self.waiter: asyncio.Future[None] | None = None
        self._stop_r, self._stop_w = os.pipe()
        self._thread = threading.Thread(target=self._run, name="probe-chain", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            ready, _, _ = select.select([self.fd, self._stop_r], [], [])
            if self._stop_r in ready:
                return
            data = os.read(self.fd, 4096)
            self.loop.call_soon_threadsafe(self._arrived, data)

    def _arrived(self, data: bytes) -> None:
        self.got += data
        if self.waiter is not None and REPLY_END in self.got and not self.waiter.done():
            self.waiter.set_result(None)

    async def round_trip(self) -> float:
        self.got.clear()
        self.waiter = self.loop.create_future()
        t0 = time.monotonic()
        os.write(self.fd, REQUEST)
        await asyncio.wait_for(self.waiter, 2.0)
        return time.monotonic() - t0

    def close(self) -> None:
        os.write(self._stop_w, b"x")
        self._thread.join(2.0)
        for fd in (self.fd, self._stop_r, self._stop_w):
            os.close(fd)


class LoopDirect:
    """The loop reads the port itself: no thread between port and caller."""

    def __init__(self, path: str, loop: asyncio.AbstractEventLoop) -> None:
        self.fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        tty.setraw(self.fd)
        self.loop = loop

    async def round_trip(self) -> float:
        got = bytearray()
        done: asyncio.Future[None] = self.loop.create_future()

        def readable() -> None:
            try:
                got.extend(os.read(self.fd, 4096))
            except BlockingIOError:
                return
            if REPLY_END in got and not done.done():
                done.set_result(None)

        self.loop.add_reader(self.fd, readable)
        try:
            t0 = time.monotonic()
            os.write(self.fd, REQUEST)
            await asyncio.wait_for(done, 2.0)
            return time.monotonic() - t0
        finally:
            self.loop.remove_reader(self.fd)

    def close(self) -> None:
        os.close(self.fd)


async def serve(engine_path: str, chain_path: str, direct_path: str) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    chain, direct = ThreadChain(chain_path, loop), LoopDirect(direct_path, loop)
    try:
        async with serial_mcp.Engine() as eng:
            conn = await eng.open(engine_path)

            async def engine_round_trip() -> float:
                t0 = time.monotonic()
                reply = await conn.transact("AT\r", match="OK", timeout_ms=2000)
                took = time.monotonic() - t0
                if reply.read.stop_reason != "match":
                    raise RuntimeError(f"engine transact did not match: {reply.read}")
                return took

            samples = {"engine": engine_round_trip, "chain": chain.round_trip, "direct": direct.round_trip}
            print("ready", flush=True)
            while line := (await reader.readline()).decode().strip():
                print(f"{await samples[line]():.9f}", flush=True)
    finally:
        chain.close()
        direct.close()


if __name__ == "__main__":
    asyncio.run(serve(*sys.argv[1:4]))
