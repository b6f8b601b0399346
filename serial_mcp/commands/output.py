"""How every front-door command speaks: data on the stream the CLI hands it (stdout), status on stderr.

A command's stdout is something to pipe (a PTY path, replayed bytes, decoded frames, a JSON
result); everything said about it (recording…, 3 frames, a timeout) is one line on stderr.
"""

from __future__ import annotations

import sys
from typing import TextIO


def announce(out: TextIO, line: str) -> None:
    """One line of the command's data, flushed at once (a caller may be waiting for it)."""
    out.write(line + "\n")
    out.flush()


def status(text: str) -> None:
    """One line for the person, on stderr."""
    sys.stderr.write(text + "\n")
    sys.stderr.flush()
