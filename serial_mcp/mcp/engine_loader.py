"""The engine, loaded when a request first needs it rather than at launch (issue 27's start-up).

A server that publishes kept tools (mcp/tool_cache.py) answers ``initialize`` and ``tools/list``
without the engine's operations, options and result models (~0.2 s of imports, a sixth of a
launch). The first request that needs them (a tool call, a resource read, a completion) loads them
on a worker thread, so the event loop keeps serving meanwhile; and once the first ``tools/list``
has been answered, ``EngineTools.load_soon`` loads them in the background, so a client's first
call usually finds them ready. Loading twice at once is safe without a lock of ours: Python's
import lock makes the second import wait for the first, and what is made after it is the same.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio

from serial_mcp.engine.services import Services

log = logging.getLogger(__name__)

ENGINE: Final = "serial_mcp.engine.operations"  # imports every operation, its options and results
BACKGROUND_DELAY_S: Final = 0.05  # after the first tools/list: its reply goes out first

_loaded: list[bool] = []  # [True] once the engine is in
_freezing: list[bool] = []  # [True] in a process that only serves: see freeze_heap_when_loaded


def freeze_heap_when_loaded() -> None:
    """For a process that only serves (the CLI's ``serve``, never a library user's or a test's): what is
    alive now, and again once the engine and its tools are made — modules, classes, schemas and
    validators, some 100 000 objects that live as long as the process — goes to the collector's
    permanent generation (``gc.freeze``), so a full collection no longer walks it. Without it one full
    collection in 500 transacts paused the event loop for 69 ms here, walking that start-up heap."""
    _freezing.append(True)
    gc.freeze()


def load_engine_blocking() -> None:
    """The engine imported (for code already on a worker thread, as a sync resource is)."""
    if not _loaded:
        importlib.import_module(ENGINE)
        _loaded.append(True)


async def load_engine() -> None:
    """The engine imported, on a worker thread the first time (afterwards one flag test)."""
    if not _loaded:
        await anyio.to_thread.run_sync(load_engine_blocking)


ToolFunction = Callable[..., Awaitable[Any]]


class EngineTools:
    """The real tool functions (mcp/tools.py), made when the first one is asked for."""

    def __init__(self, svc: Services) -> None:
        self._svc = svc
        self._functions: dict[str, ToolFunction] | None = None
        self._background: asyncio.Future[None] | None = None  # done when a background load has ended

    def functions(self) -> dict[str, ToolFunction]:
        """Every tool function by name (blocking the first time: imports the engine). Two first
        calls at once may both make them: the same functions, and either set serves."""
        made = self._functions
        if made is None:
            load_engine_blocking()
            from serial_mcp.mcp import tools

            made = self._functions = tools.tool_functions(self._svc)
            if _freezing:
                gc.freeze()
        return made

    def loader(self, name: str) -> Callable[[], ToolFunction]:
        return lambda: self.functions()[name]

    def load_soon(self) -> None:
        """Load the engine in the background shortly (called when a tools/list was answered)."""
        if self._background is not None or self._functions is not None:
            return
        loop = asyncio.get_running_loop()
        done = self._background = loop.create_future()

        def ended(_: object) -> None:
            if not done.done():
                done.set_result(None)

        def start() -> None:
            loop.run_in_executor(None, self._load_quietly).add_done_callback(ended)

        loop.call_later(BACKGROUND_DELAY_S, start)

    async def background_loaded(self) -> None:
        """Until a background load that was asked for has ended (for tests and diagnostics)."""
        if self._background is not None:
            await asyncio.shield(self._background)

    def _load_quietly(self) -> None:
        try:
            self.functions()
        except Exception:  # the first call loads again and reports what is wrong
            log.debug("background engine load failed", exc_info=True)
