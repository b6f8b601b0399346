"""How many ``serial_mcp`` files one ``transact`` touches on its way down and back (issue 41.2).

Opens ``loop://`` (default) or a PTY with a far-end responder (``--port pty``: ``AT\\r`` answered
``\\r\\nOK\\r\\n`` by a thread of this script, so the RX pump thread reads a real fd) through
``serial_mcp.Engine`` (the Python API: the same operation the MCP tool calls), warms up with a few
transacts, then counts the distinct ``serial_mcp`` files entered by every Python call while one more
transact runs. The hook is installed with ``sys.setprofile`` (the calling thread) and
``threading.setprofile`` *before* the port opens, so the port's own threads (the RX pump, workers)
carry it too; it records only while the counted transact runs. ``--list`` names the files and the
threads that entered them (``main`` for the calling thread).

    python bench/count_transact_files.py [--port loop|pty] [--list] [--max N]   # --max: exit 1 above N
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
from collections import defaultdict
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import serial_mcp

PACKAGE = str(Path(serial_mcp.__file__).resolve().parent)


class Counter:
    """A profile hook that records (file, thread) while ``on``."""

    def __init__(self) -> None:
        self.on = False
        self.files: dict[str, set[str]] = defaultdict(set)

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if self.on and event == "call":
            name = frame.f_code.co_filename
            if name.startswith(PACKAGE):
                thread = threading.current_thread()
                who = "main" if thread is threading.main_thread() else thread.name
                self.files[name[len(PACKAGE) + 1 :]].add(who)


async def traced_transact(port: str) -> Counter:
    counter = Counter()
    threading.setprofile(counter)
    sys.setprofile(counter)
    pty = device = None
    try:
        url, match = "loop://", "AT"
        if port == "pty":
            from _pty_devices import Responder, open_pty

            pty = open_pty()
            device = Responder(pty.master).start()
            url, match = pty.path, "OK"
        async with serial_mcp.Engine() as eng:
            conn = await eng.open(url)
            for _ in range(3):  # warm: what a first call sets up once is not the path
                await conn.transact("AT\r", match=match, timeout_ms=2000)
            counter.on = True
            reply = await conn.transact("AT\r", match=match, timeout_ms=2000)
            counter.on = False
            if reply.read.stop_reason != "match":
                raise RuntimeError(f"transact did not match: {reply.read}")
            await conn.close()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
        if device is not None:
            device.stop()
        if pty is not None:
            pty.close()
    return counter


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", choices=("loop", "pty"), default="loop", help="loop:// or a PTY")
    parser.add_argument("--list", action="store_true", help="name the files (and the threads)")
    parser.add_argument("--max", type=int, default=None, help="exit 1 if more files than this")
    args = parser.parse_args()
    files = asyncio.run(traced_transact(args.port)).files
    if args.list:
        for name in sorted(files):
            print(f"{name}  ({', '.join(sorted(files[name]))})")
    on_main = sum(1 for who in files.values() if "main" in who)
    print(f"one transact ({args.port}): {len(files)} serial_mcp files, {on_main} on the calling thread")
    return 1 if args.max is not None and len(files) > args.max else 0


if __name__ == "__main__":
    sys.exit(main())
