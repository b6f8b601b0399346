"""Knowing, not guessing, that a Notifier has nothing more to send: instead of sleeping past its interval
and asserting that no notification came, wait for the moment its coalescing window for a URI closes with
nothing due. From then on no notification of that URI can go out without a new poke."""

from __future__ import annotations

import asyncio

from serial_mcp.mcp.notify import Notifier


class Settled:
    """Install before the pokes under test: every window that closes after that goes through ``_closed``."""

    def __init__(self, notifier: Notifier) -> None:
        self._notifier = notifier
        self._cooled = notifier._cooled
        self._changed = asyncio.Event()
        notifier._cooled = self._closed  # type: ignore[method-assign]

    def _closed(self, uri: str) -> None:
        self._cooled(uri)
        self._changed.set()

    async def wait(self, uri: str, timeout: float = 5.0) -> None:
        """Return once ``uri`` is out of its window with no trailing notification due or being sent."""
        async with asyncio.timeout(timeout):
            while uri in self._notifier._cooling or uri in self._notifier._sending:
                self._changed.clear()
                await self._changed.wait()
