"""How every front-door command speaks: data on the stream the CLI hands it (stdout), status on stderr.

A command's stdout is something to pipe (a PTY path, replayed bytes, decoded frames, a JSON
result); everything said about it (recording…, 3 frames, a timeout) is one line on stderr.
"""

from __future__ import annotations

import sys
from typing import TextIO

from serial_mcp import messages


def announce(out: TextIO, line: str) -> None:
    """One line of the command's data, flushed at once (a caller may be waiting for it)."""
    out.write(line + "\n")
    out.flush()


def status(text: str) -> None:
    """One line for the person, on stderr."""
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def for_person(text: str) -> str:
    """A tool's message as the CLI says it: a tool named as an action becomes the command to type
    (``call list_ports`` → ``run 'serial-mcp ports'``)."""
    for tool_words, command in messages.CLI_TOOL_WORDS.items():
        text = text.replace(tool_words, command)
    return text
