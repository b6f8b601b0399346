"""The engine as a library: ``serial_mcp.Engine`` for tests, scripts and notebooks.

    async with serial_mcp.Engine() as eng:
        conn = await eng.open("/dev/ttyUSB0", baud_rate=115200)
        reply = await conn.transact("AT\\r", match="OK")
        text = reply.read.data  # the reply, as the transact tool returns it

The same operations the MCP tools and the CLI call (``serial_mcp.engine``), with the same typed
results and the same errors (``serial_mcp.SerialMcpError`` with a stable ``code``). For code
without an event loop, ``SyncEngine`` runs the engine on a private loop thread.
"""

from __future__ import annotations

import asyncio
import os
import threading
import urllib.parse
from collections.abc import Callable, Coroutine
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

from serial_mcp.core.settings import SerialSettings
from serial_mcp.engine import io_ops, line_ops, log_ops, port_ops, results
from serial_mcp.engine.access import AccessPolicy, Caller
from serial_mcp.engine.services import Services
from serial_mcp.serial.handle import Opener
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.openers import RoutingOpener, default_opener
from serial_mcp.serial.playback import Playback
from serial_mcp.serial.ports import PortInfo, list_system_ports
from serial_mcp.serial.pty_bridge import PtyBridge
from serial_mcp.serial.replay import ReplayMode, ReplayOpener
from serial_mcp.serial.sim import SimOpener
from serial_mcp.serial.system_open import SystemOpener
from serial_mcp.store.captures import CaptureStore, Quotas

T = TypeVar("T")

__all__ = [
    "Engine",
    "EngineConnection",
    "Playback",
    "PtyBridge",
    "Quotas",
    "ReplayMode",
    "SyncConnection",
    "SyncEngine",
    "local_opener",
    "play_replay",
    "replay_url",
    "serve_pty",
]


class EngineConnection:
    """One open port. Reads consume this connection's ``default`` cursor unless told otherwise."""

    def __init__(self, engine: Engine, connection_id: str, opened: results.OpenResult) -> None:
        self._engine = engine
        self.id = connection_id
        self.opened = opened

    @property
    def port(self) -> str:
        return self.opened.port

    async def read(self, **options: Any) -> results.ReadResult:
        """Read what arrived: ``match``, ``timeout_ms``, ``idle_ms``, ``max_bytes``, ``protocol`` …
        (the ``read`` tool's options; ``from_`` for ``from``)."""
        return await io_ops.read(self._engine.services, self._engine.caller, self.id, **options)

    async def write(self, data: str = "", **options: Any) -> results.WriteResult:
        """Send ``data`` (``encoding``: utf8 | hex | base64; ``keys``; ``protocol`` framing)."""
        return await io_ops.write(self._engine.services, self._engine.caller, self.id, data, **options)

    async def transact(self, data: str, match: Any = None, **options: Any) -> results.TransactResult:
        """Write ``data`` and read the reply from a mark taken before the write."""
        return await io_ops.transact(
            self._engine.services, self._engine.caller, self.id, data, match=match, **options
        )

    async def capture_boot(self, **options: Any) -> results.CaptureBootResult:
        return await io_ops.capture_boot(self._engine.services, self._engine.caller, self.id, **options)

    async def flush(self, target: io_ops.FlushTarget = "input") -> results.FlushResult:
        return await io_ops.flush(self._engine.services, self._engine.caller, self.id, target)

    async def set_dtr_rts(self, dtr: bool | None = None, rts: bool | None = None) -> results.LinesResult:
        return await line_ops.set_dtr_rts(self._engine.services, self._engine.caller, self.id, dtr, rts)

    async def send_break(self, duration_ms: int = 250) -> results.BreakResult:
        return await line_ops.send_break(self._engine.services, self._engine.caller, self.id, duration_ms)

    async def reconfigure(self, **settings: Any) -> results.ReconfigureResult:
        return await line_ops.reconfigure(self._engine.services, self._engine.caller, self.id, **settings)

    def status(self) -> results.StatusResult:
        return port_ops.get_status(self._engine.services, self._engine.caller, self.id)

    def log(self, limit: int = 100, since: int | None = None) -> results.LogResult:
        return log_ops.get_log(self._engine.services, self._engine.caller, self.id, limit=limit, since=since)

    async def close(self) -> results.CloseResult:
        return await port_ops.close(self._engine.services, self._engine.caller, self.id)

    async def record(
        self, action: log_ops.RecordAction = "status", path: str | None = None, note: str | None = None
    ) -> results.RecordResult:
        """Start (``path``: a capture name in the engine's ``capture_dir``), stop or query recording."""
        return await log_ops.record(self._engine.services, self._engine.caller, self.id, action, path, note)

    async def wait_lost(self) -> str:
        """Wait until the port stops being open (unplugged, failed, closed); returns why: the last
        error, or the state (``closed``, ``disconnected`` …)."""
        conn = self._engine.services.connection(self._engine.caller, self.id)
        while conn.state == "open":
            await conn.wait_change(3600)
        return conn.last_error or conn.state

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.id in {c.connection_id for c in port_ops.list_connections(self._engine.services).connections}:
            await self.close()


class Engine:
    """Ports, buffers and stores for one program. ``opener`` decides where bytes come from (default:
    real ports, ``sim://`` devices and ``replay://`` captures); ``capture_dir`` enables captures."""

    def __init__(
        self,
        *,
        opener: Opener | None = None,
        capture_dir: Path | str | None = None,
        port_lister: Callable[[], list[PortInfo]] = list_system_ports,
        read_only: bool = False,
        capture_quotas: Quotas | None = None,
    ) -> None:
        directory = Path(capture_dir) if capture_dir is not None else None
        self.services = Services(
            ConnectionManager(opener or default_opener(directory)),
            CaptureStore(directory, capture_quotas),
            None,
            port_lister,
            AccessPolicy(read_only=read_only),
        )
        self.caller = Caller.local()

    async def open(self, port: str, **options: Any) -> EngineConnection:
        """Open ``port`` (a path or URL); options as the ``open`` tool's (``baud_rate``, ``protocol``,
        ``rx_framing``, ``reconnect``, ``record`` …)."""
        extra = {k: options.pop(k) for k in ("profile_mode", "record", "mirror", "share") if k in options}
        extra.setdefault("profile_mode", "none")
        opened = await port_ops.open_port(self.services, self.caller, port, options, **extra)
        return EngineConnection(self, opened.connection_id, opened)

    async def list_ports(self) -> results.ListPortsResult:
        return await port_ops.list_ports(self.services)

    def connections(self) -> results.ListConnectionsResult:
        return port_ops.list_connections(self.services)

    async def close(self) -> None:
        """Close every connection (their pumps stop, their ports are released)."""
        await self.services.manager.close_all()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


class SyncConnection:
    """``EngineConnection`` for code without an event loop: the same methods, blocking."""

    def __init__(self, runner: SyncEngine, conn: EngineConnection) -> None:
        self._run = runner.run
        self.conn = conn
        self.id = conn.id

    def read(self, **options: Any) -> results.ReadResult:
        return self._run(self.conn.read(**options))

    def write(self, data: str = "", **options: Any) -> results.WriteResult:
        return self._run(self.conn.write(data, **options))

    def transact(self, data: str, match: Any = None, **options: Any) -> results.TransactResult:
        return self._run(self.conn.transact(data, match, **options))

    def status(self) -> results.StatusResult:
        return self._run(_call(self.conn.status))

    def close(self) -> results.CloseResult:
        return self._run(self.conn.close())


async def _call(fn: Callable[[], T]) -> T:
    return fn()


class SyncEngine:
    """A blocking ``Engine`` for scripts and plain tests: ``with SyncEngine() as eng: …``."""

    def __init__(self, **options: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="serial-mcp-engine", daemon=True)
        self._thread.start()
        self.engine: Engine = self.run(_make(options))

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def open(self, port: str, **options: Any) -> SyncConnection:
        return SyncConnection(self, self.run(self.engine.open(port, **options)))

    def close(self) -> None:
        if self._loop.is_closed():
            return
        self.run(self.engine.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _make(options: dict[str, Any]) -> Engine:
    return Engine(**options)  # built on the engine's loop: the manager binds to it


# --- devices on a PTY, for the software under test (``replay --pty``, the pytest fixtures) ---------


def replay_url(
    file: str | os.PathLike[str], mode: ReplayMode = "timed", speed: float = 1.0, loop: bool = False
) -> str:
    """The ``replay://`` URL of a capture file (any characters in its path kept exactly)."""
    path = urllib.parse.quote(os.fspath(file), safe="/")
    return f"replay://{path}?mode={mode}&speed={speed}&loop={'true' if loop else 'false'}"


def local_opener(capture_dir: Path | str | None = None) -> RoutingOpener:
    """An opener for a person's own programs and tests (``Engine(opener=local_opener())``):
    ``sim://`` devices, replays of any file they name (relative names from the working directory,
    then ``capture_dir`` or ``captures/``; the server confines replays, this does not), real ports."""
    directory = Path(capture_dir) if capture_dir is not None else None
    return RoutingOpener({"sim": SimOpener(), "replay": ReplayOpener(directory)}, SystemOpener())


def serve_pty(
    port: str, *, capture_dir: Path | str | None = None, on_finished: Callable[[str], None] | None = None
) -> PtyBridge:
    """Serve ``port`` (``sim://modem``, ``replay://boot.jsonl?mode=respond`` …) on a new PTY, raw:
    open ``bridge.path`` from the program under test; ``bridge.close()`` ends it. Playing starts
    when a program first opens the PTY; ``on_finished(path)`` runs when a replay has played through."""
    handle = local_opener(capture_dir).open(port, SerialSettings())
    return PtyBridge(handle, on_finished).start()


def play_replay(url: str, *, capture_dir: Path | str | None = None) -> Playback:
    """A ``replay://`` URL's bytes for a sink of your own: ``play_replay(url).run(write)``."""
    directory = Path(capture_dir) if capture_dir is not None else None
    return Playback(ReplayOpener(directory).open(url, SerialSettings()))
