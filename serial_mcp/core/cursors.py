"""Read cursors: named positions in a connection's RX stream.

``default`` is the local caller's (each session has its own, ``default@<key>``); any other name is
created on first use, so two agents (or tasks) each get every byte. A cursor also carries the
frame decoder state of framed reads, so a frame torn across two reads is decoded whole on the next
one. A session's own default goes when the session ends (``remove``), so short sessions never
fill the table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from serial_mcp import messages
from serial_mcp.errors import InvalidArgument

DEFAULT_CURSOR = "default"
MAX_CURSORS = 64
# "@key": a session's own default cursor (a name no client can give)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}(?:@[A-Za-z0-9]{1,32})?")


@dataclass
class Cursor:
    """A position (absolute offset of the next unread byte) plus framed-read state."""

    name: str
    offset: int
    decoder: Any = None  # a core.decode.StreamDecoder while framed reads use this cursor
    decoder_key: str | None = None  # the framing config the decoder was built from
    pending: list[Any] = field(default_factory=list)  # decoded frames not yet returned (max_frames)
    fed: int = 0  # how far the decoder has been fed (>= offset: a partial frame may be inside)
    screen: Any = None  # a core.screen.TerminalScreen while reads on this cursor ask for one

    def drop_decoder(self) -> None:
        """Forget framed-read state; the next read starts again at ``offset``."""
        self.decoder = None
        self.decoder_key = None
        self.pending = []
        self.fed = self.offset


class CursorTable:
    """All cursors of one connection; bounded so a chatty client cannot grow it without limit."""

    def __init__(self, start: int = 0) -> None:
        self._cursors: dict[str, Cursor] = {DEFAULT_CURSOR: Cursor(DEFAULT_CURSOR, start)}

    def get(self, name: str, create_at: int) -> Cursor:
        """The cursor ``name``; a new one starts at ``create_at`` (the oldest retained byte)."""
        cur = self._cursors.get(name)
        if cur is not None:
            return cur
        if not _NAME.fullmatch(name):
            raise InvalidArgument(messages.CURSOR_BAD_NAME.format(name=name))
        if len(self._cursors) >= MAX_CURSORS:
            raise InvalidArgument(messages.CURSOR_TOO_MANY.format(max=MAX_CURSORS))
        cur = Cursor(name, create_at)
        self._cursors[name] = cur
        return cur

    def remove(self, name: str) -> bool:
        """Forget cursor ``name`` (its position, decoder and screen); the local ``default`` stays."""
        if name == DEFAULT_CURSOR:
            return False
        return self._cursors.pop(name, None) is not None

    def positions(self) -> dict[str, int]:
        return {name: c.offset for name, c in self._cursors.items()}

    def __iter__(self) -> Any:
        return iter(self._cursors.values())
