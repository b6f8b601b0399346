"""pytest fixtures for your own CI: serial devices on Linux PTYs, and the engine itself.

Installed with serial-mcp (a ``pytest11`` entry point), so a test only names the fixture:

``serial_replay(capture, mode="timed", speed=1.0, loop=False) -> str``
    A PTY path with a recorded capture replayed behind it: the software under test opens the path
    like any serial port. ``mode="respond"`` answers each write with the reply recorded after it.
    Relative names are found as ``serial-mcp replay`` finds them (the working directory, then
    ``captures/``), and then beside the test file.
``serial_sim(kind="modem") -> str``
    A PTY path with a simulated device behind it (``modem``: an AT modem; ``echo``).
``serial_engine``
    A ``serial_mcp.Engine`` (async) for async tests run by anyio (``@pytest.mark.anyio``), on
    asyncio; recordings go to the test's ``tmp_path``. For synchronous tests use
    ``with serial_mcp.SyncEngine() as eng:`` instead.

Everything a fixture made is closed at its teardown: the PTYs, their threads, the connections.
The engine is imported when a fixture is first used, so pytest starts as fast as without the plugin.
"""

from __future__ import annotations

import contextlib
import inspect
import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from serial_mcp import messages

if TYPE_CHECKING:
    from serial_mcp.api import Engine, PtyBridge, ReplayMode


class ReplayFactory(Protocol):
    def __call__(
        self,
        capture: str | os.PathLike[str],
        mode: ReplayMode = "timed",
        *,
        speed: float = 1.0,
        loop: bool = False,
    ) -> str: ...


class SimFactory(Protocol):
    def __call__(self, kind: str = "modem") -> str: ...


def _beside_the_test(capture: str | os.PathLike[str], test_dir: Path) -> str | os.PathLike[str]:
    """A relative name the CLI would not find (working directory, ``captures/``) but that sits next
    to the test file: that file. Anything else is left for the replay opener to resolve (or report)."""
    given = Path(capture)
    if given.is_absolute() or (Path.cwd() / given).exists() or (Path.cwd() / "captures" / given).exists():
        return capture
    beside = test_dir / given
    return beside if beside.exists() else capture


@contextlib.contextmanager
def _pty_bridges() -> Iterator[Callable[[str], str]]:
    """``serve(url)`` → the path of a PTY with ``url``'s device behind it; all closed at the end."""
    from serial_mcp.api import serve_pty

    bridges: list[PtyBridge] = []

    def serve(url: str) -> str:
        bridge = serve_pty(url)
        bridges.append(bridge)
        return bridge.path

    try:
        yield serve
    finally:
        for bridge in bridges:
            bridge.close()


@pytest.fixture
def serial_replay(request: pytest.FixtureRequest) -> Iterator[ReplayFactory]:
    """``serial_replay("boot.jsonl", mode="respond")`` → the path of a PTY replaying that capture."""
    from serial_mcp.api import replay_url

    with _pty_bridges() as serve:

        def make(
            capture: str | os.PathLike[str],
            mode: ReplayMode = "timed",
            *,
            speed: float = 1.0,
            loop: bool = False,
        ) -> str:
            return serve(replay_url(_beside_the_test(capture, request.path.parent), mode, speed, loop))

        yield make


@pytest.fixture
def serial_sim() -> Iterator[SimFactory]:
    """``serial_sim("modem")`` → the path of a PTY with a simulated device (``sim://modem``) behind it."""
    with _pty_bridges() as serve:

        def make(kind: str = "modem") -> str:
            return serve(kind if kind.startswith("sim://") else f"sim://{kind}")

        yield make


@pytest.fixture
async def serial_engine(
    anyio_backend: Any, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Engine]:
    """An ``Engine`` for an anyio test; every connection it opened is closed afterwards."""
    from serial_mcp.api import Engine, local_opener

    if not inspect.iscoroutinefunction(request.function):
        pytest.fail(messages.PYTEST_ENGINE_NOT_ASYNC, pytrace=False)
    backend = anyio_backend if isinstance(anyio_backend, str) else anyio_backend[0]
    if backend != "asyncio":
        pytest.skip(messages.PYTEST_ENGINE_BACKEND.format(backend=backend))
    async with Engine(opener=local_opener(tmp_path), capture_dir=tmp_path) as eng:
        yield eng
