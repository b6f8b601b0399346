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
import dataclasses
import inspect
import logging
import threading
import warnings
import weakref
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, Protocol, Self, TypedDict, TypeVar, Unpack

from serial_mcp import messages
from serial_mcp.engine import event_reports, port_ops, results
from serial_mcp.engine import operations as ops
from serial_mcp.engine.access import AccessPolicy, Caller
from serial_mcp.engine.lend_ops import LendResult
from serial_mcp.engine.operations import Operation, invoke
from serial_mcp.engine.options import build
from serial_mcp.engine.services import Services
from serial_mcp.serial.handle import Opener
from serial_mcp.serial.local_devices import local_opener, play_replay, replay_url, serve_pty
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.playback import Playback
from serial_mcp.serial.policy import PortPolicy, policy_opener
from serial_mcp.serial.ports import PortInfo, list_system_ports
from serial_mcp.serial.pty_bridge import PtyBridge
from serial_mcp.serial.reader import MAX_MAX_BYTES as MAX_READ_BYTES
from serial_mcp.serial.replay import ReplayMode
from serial_mcp.store.captures import CaptureStore, Quotas
from serial_mcp.store.profiles import ProfileStore

log = logging.getLogger(__name__)
T = TypeVar("T")
P = ParamSpec("P")
OptionsT = TypeVar("OptionsT")
R = TypeVar("R")

__all__ = [
    "MAX_READ_BYTES",
    "Engine",
    "EngineConnection",
    "Playback",
    "PortPolicy",
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

# Tools that are not methods of the same name, and why (tests/unit/test_api_parity.py holds both
# lists to the operation table, so a new tool cannot be left out of the API unnoticed).
NOT_METHODS: dict[str, str] = {
    "open": "Engine.open returns an EngineConnection (its .opened is the tool's OpenResult)",
    "open_profile": "Engine.open_profile returns an EngineConnection (its .opened is the tool's result)",
}


def _signature(op: Operation[Any, Any, Any], first: str) -> inspect.Signature:
    """``(self, <the options' parameters>)``: what help() and IDEs show for a bound operation."""
    # From the fields (positional ones first, as dataclasses order them), not inspect.signature:
    # the options classes build their validators, and so their __signature__, on first use.
    fields = sorted(dataclasses.fields(op.options_type), key=lambda f: bool(f.kw_only))
    params = [
        inspect.Parameter(
            f.name,
            inspect.Parameter.KEYWORD_ONLY if f.kw_only else inspect.Parameter.POSITIONAL_OR_KEYWORD,
            annotation=f.type,
            default=inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default,
        )
        for f in fields
    ]
    me = inspect.Parameter(first, inspect.Parameter.POSITIONAL_ONLY)
    return inspect.Signature([me, *params], return_annotation=inspect.signature(op.run).return_annotation)


def _describe(method: Any, op: Operation[Any, Any, Any], owner: str) -> None:
    method.__name__ = op.name
    method.__qualname__ = f"{owner}.{op.name}"
    method.__doc__ = f"{op.title}: {op.description}\n\n{inspect.getdoc(op.run) or ''}".strip()
    method.__signature__ = _signature(op, "self")


def on_connection(
    op: Operation[P, OptionsT, R],
) -> Callable[Concatenate[EngineConnection, P], Coroutine[Any, Any, R]]:
    """The operation ``op`` as a method of ``EngineConnection``: its options are the keywords
    (typed: ``mypy`` rejects an unknown one), the connection is the target."""

    async def method(self: EngineConnection, /, *args: P.args, **kwargs: P.kwargs) -> R:
        opts = build(op.options, op.name, *args, **kwargs)
        return await invoke(op, self._engine.services, self._engine.caller, self.id, opts)

    _describe(method, op, "EngineConnection")
    return method


def on_engine(op: Operation[P, OptionsT, R]) -> Callable[Concatenate[Engine, P], Coroutine[Any, Any, R]]:
    """The operation ``op`` as a method of ``Engine`` (an engine-wide operation: no target)."""

    async def method(self: Engine, /, *args: P.args, **kwargs: P.kwargs) -> R:
        opts = build(op.options, op.name, *args, **kwargs)
        return await invoke(op, self.services, self.caller, None, opts)

    _describe(method, op, "Engine")
    return method


def opening(
    op: Operation[P, OptionsT, results.OpenResult],
) -> Callable[Concatenate[Engine, P], Coroutine[Any, Any, EngineConnection]]:
    """``open`` / ``open_profile`` as ``Engine`` methods that return the open ``EngineConnection``."""

    async def method(self: Engine, /, *args: P.args, **kwargs: P.kwargs) -> EngineConnection:
        opts = build(op.options, op.name, *args, **kwargs)
        opened = await invoke(op, self.services, self.caller, None, opts)
        return EngineConnection(self, opened.connection_id, opened)

    _describe(method, op, "Engine")
    return method


class EngineConnection:
    """One open port: a method per tool that takes a ``connection_id`` (the same names, options
    and results). Reads consume this connection's ``default`` cursor unless told otherwise."""

    def __init__(self, engine: Engine, connection_id: str, opened: results.OpenResult) -> None:
        self._engine = engine
        self.id = connection_id
        self.opened = opened

    @property
    def port(self) -> str:
        return self.opened.port

    close = on_connection(ops.CLOSE)
    get_status = on_connection(ops.GET_STATUS)
    reconnect = on_connection(ops.RECONNECT)
    lend = on_connection(ops.LEND)
    read = on_connection(ops.READ)
    write = on_connection(ops.WRITE)
    transact = on_connection(ops.TRANSACT)
    flush = on_connection(ops.FLUSH)
    capture_boot = on_connection(ops.CAPTURE_BOOT)
    set_dtr_rts = on_connection(ops.SET_DTR_RTS)
    send_break = on_connection(ops.SEND_BREAK)
    set_flow_control = on_connection(ops.SET_FLOW_CONTROL)
    reconfigure = on_connection(ops.RECONFIGURE)
    save_profile = on_connection(ops.SAVE_PROFILE)
    get_log = on_connection(ops.GET_LOG)
    clear_log = on_connection(ops.CLEAR_LOG)
    export_log = on_connection(ops.EXPORT_LOG)
    record = on_connection(ops.RECORD)
    detect_baud = on_connection(ops.DETECT_BAUD)
    file_transfer = on_connection(ops.FILE_TRANSFER)

    async def release(self, timeout_ms: int | None = None) -> LendResult:
        """Lend the device node to another program (``lend(action="release")``): the buffer,
        cursors, offsets and recording stay; the port comes back on ``reclaim``, at ``timeout_ms``,
        or as soon as that program lets it go."""
        return await self.lend("release", timeout_ms=timeout_ms)

    async def reclaim(self) -> LendResult:
        """Take a released port back now (``lend(action="reclaim")``)."""
        return await self.lend("reclaim")

    def status(self) -> results.StatusResult:
        """``get_status`` without awaiting: the connection as it is now."""
        return port_ops.get_status(self._engine.services, self._engine.caller, self.id)

    def events(self, since: int = 0) -> list[dict[str, Any]]:
        """The boots, resets, crashes and boot loops detected so far (those after ``since``, their
        ``seq``), in full, with backtraces decoded when an ELF is set; see docs/events.md."""
        return event_reports.events(self._engine.services, self._engine.caller, self.id, since)

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


class EngineOptions(TypedDict, total=False):
    """``Engine``'s (and ``SyncEngine``'s) keywords, declared once so both are typed alike."""

    opener: Opener | None
    capture_dir: Path | str | None
    port_lister: Callable[[], list[PortInfo]]
    read_only: bool
    allowlist: Sequence[str] | None
    enable_url_schemes: Sequence[str]
    capture_quotas: Quotas | None
    profiles: Path | str | None
    firmware_dirs: Sequence[Path | str]
    labgrid_coordinator: str | None


class Engine:
    """Ports, buffers and stores for one program: a method per tool that takes no
    ``connection_id`` (the rest are ``EngineConnection``'s). ``opener`` decides where bytes come
    from (default: real ports, ``sim://`` devices and ``replay://`` captures); ``capture_dir``
    enables captures; ``profiles`` names a profile store (TOML) for the profile operations.

    The server's port policy, as keywords: ``read_only`` refuses every writing operation,
    ``allowlist`` admits only the ports its patterns admit (``["/dev/ttyUSB*", "usb:0403:6001"]``,
    judged as the server judges them, on every open and reconnect), ``enable_url_schemes`` lets
    the named pyserial URL schemes through (``["spy"]``). They are built into the opener exactly
    as the server builds its own (``serial.policy.policy_opener``); ``policy`` is the result."""

    def __init__(self, **options: Unpack[EngineOptions]) -> None:
        o = options
        unknown = sorted(set(o) - set(EngineOptions.__annotations__))
        if unknown:  # what mypy rejects, refused at run time too (never dropped in silence)
            raise TypeError(f"Engine() got an unexpected keyword argument {unknown[0]!r}")
        self.policy = PortPolicy.of(
            read_only=o.get("read_only", False),
            allowlist=o.get("allowlist"),
            enable_url_schemes=o.get("enable_url_schemes", ()),
            capture_dir=o.get("capture_dir"),
            firmware_dirs=o.get("firmware_dirs", ()),
            labgrid_coordinator=o.get(
                "labgrid_coordinator"
            ),  # labgrid://PLACE (issue 25); None: LG_COORDINATOR
        )
        lister = o.get("port_lister", list_system_ports)
        profiles = o.get("profiles")
        self.services = Services(
            ConnectionManager(policy_opener(self.policy, lister, o.get("opener"))),
            CaptureStore(self.policy.capture_dir, o.get("capture_quotas")),
            ProfileStore(Path(profiles)) if profiles is not None else None,
            lister,
            AccessPolicy(read_only=self.policy.read_only),
            self.policy.elf_scope(),
        )
        self.caller = Caller.local()

    open = opening(ops.OPEN)
    open_profile = opening(ops.OPEN_PROFILE)
    list_ports = on_engine(ops.LIST_PORTS)
    identify = on_engine(ops.IDENTIFY)
    list_connections = on_engine(ops.LIST_CONNECTIONS)
    list_profiles = on_engine(ops.LIST_PROFILES)
    delete_profile = on_engine(ops.DELETE_PROFILE)
    configure = on_engine(ops.CONFIGURE)
    rollback_profile = on_engine(ops.ROLLBACK_PROFILE)
    list_captures = on_engine(ops.LIST_CAPTURES)
    compute_checksum = on_engine(ops.COMPUTE_CHECKSUM)

    def connections(self) -> results.ListConnectionsResult:
        """``list_connections`` without awaiting."""
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


# --- the blocking API: the async one, method for method -------------------------------------------


class _Runner(Protocol):
    def run(self, coro: Coroutine[object, object, T]) -> T: ...


def blocking(
    method: Callable[Concatenate[Any, P], Coroutine[Any, Any, R]], attribute: str
) -> Callable[Concatenate[Any, P], R]:
    """``method`` of the async object in ``self.<attribute>``, run to completion on the engine's loop."""

    def run(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        target = getattr(self, attribute)
        coro = getattr(target, method.__name__)(*args, **kwargs)
        result: R = self._runner.run(coro)
        return result

    run.__name__ = method.__name__
    run.__doc__ = method.__doc__
    run.__signature__ = inspect.signature(method)  # type: ignore[attr-defined]
    return run


class SyncConnection:
    """``EngineConnection`` for code without an event loop: every method, blocking."""

    def __init__(self, runner: _Runner, conn: EngineConnection) -> None:
        self._runner = runner
        self.conn = conn
        self.id = conn.id

    close = blocking(EngineConnection.close, "conn")
    get_status = blocking(EngineConnection.get_status, "conn")
    reconnect = blocking(EngineConnection.reconnect, "conn")
    lend = blocking(EngineConnection.lend, "conn")
    release = blocking(EngineConnection.release, "conn")
    reclaim = blocking(EngineConnection.reclaim, "conn")
    read = blocking(EngineConnection.read, "conn")
    write = blocking(EngineConnection.write, "conn")
    transact = blocking(EngineConnection.transact, "conn")
    flush = blocking(EngineConnection.flush, "conn")
    capture_boot = blocking(EngineConnection.capture_boot, "conn")
    set_dtr_rts = blocking(EngineConnection.set_dtr_rts, "conn")
    send_break = blocking(EngineConnection.send_break, "conn")
    set_flow_control = blocking(EngineConnection.set_flow_control, "conn")
    reconfigure = blocking(EngineConnection.reconfigure, "conn")
    save_profile = blocking(EngineConnection.save_profile, "conn")
    get_log = blocking(EngineConnection.get_log, "conn")
    clear_log = blocking(EngineConnection.clear_log, "conn")
    export_log = blocking(EngineConnection.export_log, "conn")
    record = blocking(EngineConnection.record, "conn")
    detect_baud = blocking(EngineConnection.detect_baud, "conn")
    file_transfer = blocking(EngineConnection.file_transfer, "conn")
    wait_lost = blocking(EngineConnection.wait_lost, "conn")

    def status(self) -> results.StatusResult:
        return self._runner.run(_call(self.conn.status))

    def events(self, since: int = 0) -> list[dict[str, Any]]:
        return self._runner.run(_call(lambda: self.conn.events(since)))


async def _call(fn: Callable[[], T]) -> T:
    return fn()


def opened(
    method: Callable[Concatenate[Engine, P], Coroutine[Any, Any, EngineConnection]],
) -> Callable[Concatenate[SyncEngine, P], SyncConnection]:
    """``Engine.open`` / ``open_profile``, blocking: a ``SyncConnection``, typed as the async one."""

    def run(self: SyncEngine, /, *args: P.args, **kwargs: P.kwargs) -> SyncConnection:
        return SyncConnection(self, self.run(method(self.engine, *args, **kwargs)))

    run.__name__ = method.__name__
    run.__doc__ = method.__doc__
    run.__signature__ = inspect.signature(method)  # type: ignore[attr-defined]
    return run


class SyncEngine:
    """A blocking ``Engine`` for scripts and plain tests: ``with SyncEngine() as eng: …``. Takes
    ``Engine``'s keywords; every ``Engine`` method, blocking (``open`` gives a ``SyncConnection``).

    ``close()`` (or the ``with`` block) closes its ports and ends its loop thread. One dropped
    without it is finalized when it is collected (or at exit): its ports are closed and its threads
    end, with a ``ResourceWarning`` as for an unclosed file."""

    def __init__(self, **options: Unpack[EngineOptions]) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="serial-mcp-engine", daemon=True)
        self._thread.start()
        try:
            self.engine: Engine = self.run(_make(options))
        except BaseException:  # a bad keyword must not leave the loop thread behind either
            _wind_down(self._loop, self._thread, None)
            raise
        # no reference to self: only what must be closed (the engine's pumps, the loop and its thread)
        self._finalizer = weakref.finalize(self, _collected, self._loop, self._thread, self.engine)

    @property
    def _runner(self) -> SyncEngine:  # ``blocking`` runs through it; a property, so self is no cycle
        return self

    def run(self, coro: Coroutine[object, object, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    open = opened(Engine.open)
    open_profile = opened(Engine.open_profile)

    list_ports = blocking(Engine.list_ports, "engine")
    identify = blocking(Engine.identify, "engine")
    list_connections = blocking(Engine.list_connections, "engine")
    list_profiles = blocking(Engine.list_profiles, "engine")
    delete_profile = blocking(Engine.delete_profile, "engine")
    configure = blocking(Engine.configure, "engine")
    rollback_profile = blocking(Engine.rollback_profile, "engine")
    list_captures = blocking(Engine.list_captures, "engine")
    compute_checksum = blocking(Engine.compute_checksum, "engine")

    def close(self) -> None:
        """Close every connection and end the loop thread. Idempotent."""
        if self._finalizer.detach() is None:
            return  # closed already (or finalized)
        _wind_down(self._loop, self._thread, self.engine, strict=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


CLOSE_WAIT_S = 10.0  # how long a finalizer waits for an engine's ports to close


def _collected(loop: asyncio.AbstractEventLoop, thread: threading.Thread, engine: Engine) -> None:
    """A ``SyncEngine`` was collected (or the interpreter exits) without ``close()``."""
    warnings.warn(messages.SYNC_ENGINE_NOT_CLOSED, ResourceWarning, stacklevel=1)
    _wind_down(loop, thread, engine)


def _wind_down(
    loop: asyncio.AbstractEventLoop, thread: threading.Thread, engine: Engine | None, *, strict: bool = False
) -> None:
    """Close ``engine``'s connections on its loop, stop the loop, join its thread, close the loop.
    ``strict`` (an explicit ``close()``): a failure to close is raised; a finalizer only logs it."""
    if loop.is_closed():
        return
    if threading.current_thread() is thread:  # collected on its own loop: it cannot wait for itself

        async def close_then_stop() -> None:
            try:
                if engine is not None:
                    await engine.close()
            finally:
                loop.stop()

        loop.create_task(close_then_stop())
        return
    try:
        if engine is not None:
            asyncio.run_coroutine_threadsafe(engine.close(), loop).result(None if strict else CLOSE_WAIT_S)
    except Exception:
        if strict:
            raise
        log.warning("closing a dropped SyncEngine failed", exc_info=True)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        if not thread.is_alive():
            loop.close()


async def _make(options: EngineOptions) -> Engine:
    return Engine(**options)  # built on the engine's loop: the manager binds to it
