"""TerminalScreen: what a full-screen TUI (menuconfig, top, a bootloader menu) shows, as rows of text.

A thin wrapper over pyte's VT100 emulator (sans-IO: bytes in, screen state out). One screen lives
with a read cursor, so successive reads keep drawing on the same screen like a real terminal.
"""

from __future__ import annotations

from serial_mcp import messages
from serial_mcp.errors import InvalidArgument

MIN_SIZE, MAX_COLS, MAX_ROWS = 10, 400, 200


class TerminalScreen:
    """A ``cols`` × ``rows`` terminal fed with raw device bytes."""

    def __init__(self, cols: int = 80, rows: int = 24) -> None:
        if not (MIN_SIZE <= cols <= MAX_COLS and MIN_SIZE <= rows <= MAX_ROWS):
            raise InvalidArgument(messages.SCREEN_SIZE.format(cols=MAX_COLS, rows=MAX_ROWS, min=MIN_SIZE))
        import pyte  # on the first screen, not at start-up (issue 27)

        self.size = (cols, rows)
        self._screen = pyte.Screen(cols, rows)
        self._stream = pyte.ByteStream(self._screen)

    def feed(self, data: bytes) -> None:
        self._stream.feed(data)

    def rows(self) -> list[str]:
        """The visible rows, trailing spaces removed."""
        return [line.rstrip() for line in self._screen.display]

    @property
    def cursor(self) -> tuple[int, int]:
        """(row, column) of the cursor, 0-based."""
        return self._screen.cursor.y, self._screen.cursor.x
