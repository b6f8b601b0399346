"""``python -m serial_mcp`` with cProfile switched on and off by signals (for ``profile_transact.py``).

SIGUSR1 starts profiling the main thread (the event loop's, where every MCP call is served);
SIGUSR2 stops it and writes the stats to the path given as the first argument. Only for benches:
nothing in ``serial_mcp`` knows about it.
"""

from __future__ import annotations

import cProfile
import signal
import sys
from types import FrameType

from serial_mcp.cli import main

OUT = sys.argv.pop(1)
PROFILER = cProfile.Profile()


def _start(signum: int, frame: FrameType | None) -> None:
    PROFILER.enable()


def _stop(signum: int, frame: FrameType | None) -> None:
    PROFILER.disable()
    PROFILER.dump_stats(OUT)


signal.signal(signal.SIGUSR1, _start)
signal.signal(signal.SIGUSR2, _stop)
sys.exit(main())
