"""How many ``serial_mcp`` files one ``transact`` touches on its way down and back (issue 41.2).

Opens ``loop://`` through ``serial_mcp.Engine`` (the Python API: the same operation the MCP tool
calls), warms up with a few transacts, then traces one more with ``sys.setprofile`` (every Python
call and return on the calling thread) and ``threading.setprofile`` (the pump's thread, if it makes
a call while the transact runs) and prints the distinct ``serial_mcp`` files it entered.

    python bench/count_transact_files.py [--list] [--max N]   # --max: exit 1 above N files
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import serial_mcp

PACKAGE = str(Path(serial_mcp.__file__).resolve().parent)


def count(files: set[str]) -> Any:
    def profile(frame: FrameType, event: str, arg: Any) -> None:
        name = frame.f_code.co_filename
        if name.startswith(PACKAGE):
            files.add(name[len(PACKAGE) + 1 :])

    return profile


async def traced_transact() -> set[str]:
    files: set[str] = set()
    async with serial_mcp.Engine() as eng:
        conn = await eng.open("loop://")
        for _ in range(3):
            await conn.transact("AT\r", match="AT", timeout_ms=2000)
        hook = count(files)
        threading.setprofile(hook)
        sys.setprofile(hook)
        try:
            reply = await conn.transact("AT\r", match="AT", timeout_ms=2000)
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
        if reply.read.stop_reason != "match":
            raise RuntimeError(f"transact did not match: {reply.read}")
        await conn.close()
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="name the files")
    parser.add_argument("--max", type=int, default=None, help="exit 1 if more files than this")
    args = parser.parse_args()
    files = asyncio.run(traced_transact())
    if args.list:
        for name in sorted(files):
            print(name)
    print(f"one transact: {len(files)} serial_mcp files")
    return 1 if args.max is not None and len(files) > args.max else 0


if __name__ == "__main__":
    sys.exit(main())
