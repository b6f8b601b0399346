"""One labgrid coordinator session per address, on a thread and event loop of its own (issue 25).

labgrid's ``ClientSession`` (``labgrid.remote.client``) is asyncio code bound to the loop it was made
on, and its place/target helpers call ``run_until_complete``; serial-mcp's own loop is everyone's. So
each coordinator address gets a ``LabClient``: a daemon thread running a private loop, on which the
session lives. Callers (worker threads: openers run off the engine's loop) submit coroutines with
``run`` and wait at most a bounded time; a coordinator that does not answer is ``unavailable`` naming
its address. A session whose stream broke (the coordinator went away) is replaced on the next call.

labgrid is imported here and only here, lazily: without the ``serial-mcp[labgrid]`` extra nothing
changes but that ``labgrid://`` says how to install it.
"""

from __future__ import annotations

import asyncio
import getpass
import logging
import os
import socket
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, TypeVar

from serial_mcp import messages
from serial_mcp.errors import DeviceError, ErrorCode, PortError, SerialMcpError

log = logging.getLogger(__name__)

T = TypeVar("T")
DEFAULT_PORT = 20408  # labgrid's own default coordinator port
CONNECT_TIMEOUT = 5.0  # seconds for a coordinator to answer the session's first sync
CALL_TIMEOUT = 15.0  # seconds for one request (acquire, release, a sync) once connected
LABGRID_PIN = "26.0.1"  # the version the extra pins (pyproject.toml)


def load_labgrid() -> ModuleType:
    """``labgrid.remote.client``, or ``not_supported`` saying how to install the extra."""
    try:
        from labgrid.remote import client  # type: ignore[import-untyped,unused-ignore]
    except ImportError as exc:
        raise DeviceError(
            ErrorCode.NOT_SUPPORTED, messages.LABGRID_NOT_INSTALLED.format(version=LABGRID_PIN, error=exc)
        ) from None
    return client  # type: ignore[no-any-return,unused-ignore]


def identity() -> str:
    """How labgrid knows this server: ``host/user`` (``LG_HOSTNAME``, ``LG_USERNAME``, as labgrid
    reads them)."""
    host = os.environ.get("LG_HOSTNAME") or socket.gethostname()
    user = os.environ.get("LG_USERNAME") or getpass.getuser()
    return f"{host}/{user}"


@dataclass(frozen=True)
class PlaceView:
    """A place as the coordinator last told it (a copy: safe to read on any thread)."""

    name: str
    tags: dict[str, str]
    comment: str
    acquired: str | None
    changed: float
    acquired_resources: list[tuple[str, str, str, str]]  # (exporter, group, cls, name)
    matches: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ResourceView:
    """One resource of an acquired place: its labgrid class, parameters and availability."""

    exporter: str
    group: str
    cls: str
    name: str  # the name in the place (a match's ``rename``, else the resource's)
    args: dict[str, Any]
    extra: dict[str, Any]
    avail: bool


class LabClient:
    """The coordinator at ``address`` (``HOST[:PORT]``), reached through labgrid's ``ClientSession``."""

    def __init__(self, address: str) -> None:
        self.address = address if ":" in address.rsplit("]", 1)[-1] else f"{address}:{DEFAULT_PORT}"
        self._lg = load_labgrid()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"labgrid {self.address}", daemon=True
        )
        self._thread.start()
        self._session: Any = None
        self._lock = threading.Lock()  # one session start at a time

    # --- running on the session's loop ------------------------------------------------------------

    def run(self, work: Callable[[Any], Awaitable[T]], timeout: float = CALL_TIMEOUT) -> T:
        """``await work(session)`` on the session's loop, from a worker thread; ``unavailable`` when
        the coordinator cannot be reached or does not answer within ``timeout`` seconds."""
        session = self._ensure_session()
        return self._submit(work(session), timeout)

    def _submit(self, coro: Awaitable[T], timeout: float) -> T:
        async def wrapped() -> T:
            return await asyncio.wait_for(coro, timeout)

        future = asyncio.run_coroutine_threadsafe(wrapped(), self._loop)
        try:
            return future.result(timeout + 1.0)
        except TimeoutError:
            future.cancel()
            raise self.unavailable(messages.LABGRID_NO_ANSWER.format(seconds=f"{timeout:g}")) from None
        except self._lg.Error as exc:  # labgrid's UserError / ServerError
            raise self.unavailable(str(exc)) from None

    def unavailable(self, why: str) -> SerialMcpError:
        return PortError(
            ErrorCode.UNAVAILABLE, messages.LABGRID_UNAVAILABLE.format(address=self.address, error=why)
        )

    def _ensure_session(self) -> Any:
        with self._lock:
            session = self._session
            if session is not None and not session.stopping.is_set():
                return session
            self._session = None
            if session is not None:  # the stream broke: the coordinator went away (or restarted)
                self._close_quietly(session)
            self._session = self._submit(self._start(), CONNECT_TIMEOUT)
            return self._session

    async def _start(self) -> Any:
        grpc_address = self._lg.proxymanager.get_grpc_address(self.address, default_port=DEFAULT_PORT)
        session = self._lg.ClientSession(grpc_address, asyncio.get_running_loop())
        try:
            await session.start()  # raises ServerError when the stream ended before the first sync
        except BaseException:
            await self._stop(session)
            raise
        return session

    @staticmethod
    async def _stop(session: Any) -> None:
        try:
            await session.stop()
        except Exception:
            log.debug("labgrid session stop failed", exc_info=True)
        try:
            await session.close()
        except Exception:
            log.debug("labgrid channel close failed", exc_info=True)

    def _close_quietly(self, session: Any) -> None:
        try:
            asyncio.run_coroutine_threadsafe(self._stop(session), self._loop).result(CALL_TIMEOUT)
        except Exception:
            log.debug("closing a broken labgrid session failed", exc_info=True)

    def close(self) -> None:
        """Stop the session and the loop's thread (the places it holds stay as they are)."""
        with self._lock:
            session, self._session = self._session, None
        if session is not None:
            self._close_quietly(session)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(CALL_TIMEOUT)
        if not self._thread.is_alive():
            self._loop.close()

    # --- what the coordinator knows ---------------------------------------------------------------

    def places(self) -> list[PlaceView]:
        """Every place, as of a sync with the coordinator now."""

        async def work(session: Any) -> list[PlaceView]:
            await session.sync_with_coordinator()
            return [_place_view(p) for _, p in sorted(session.places.items())]

        return self.run(work)

    def place(self, name: str) -> PlaceView | None:
        return next((p for p in self.places() if p.name == name), None)

    def resources(self, place: str) -> list[ResourceView]:
        """The resources the place holds now (only an acquired place has any)."""

        async def work(session: Any) -> list[ResourceView]:
            await session.sync_with_coordinator()
            found = session.places.get(place)
            if found is None:
                return []
            views = []
            for path in found.acquired_resources:
                exporter, group, cls, name = path
                entry = session.resources.get(exporter, {}).get(group, {}).get(name)
                match = found.getmatch(path)
                shown = match.rename if match is not None and match.rename else name
                if entry is None or "cls" not in entry.data:  # its exporter is gone: the place still lists it
                    views.append(ResourceView(exporter, group, cls, shown, {}, {}, False))
                    continue
                args, extra = dict(entry.args), dict(entry.extra)
                views.append(ResourceView(exporter, group, entry.cls, shown, args, extra, bool(entry.avail)))
            return views

        return self.run(work)

    def acquire(self, place: str) -> None:
        """Acquire ``place`` for this server's identity; labgrid's refusal text on failure
        (``LabRefused``), ``unavailable`` when the coordinator is not there."""
        self._place_call("AcquirePlace", place)

    def release(self, place: str) -> None:
        self._place_call("ReleasePlace", place)

    def _place_call(self, method: str, place: str) -> None:
        request = getattr(self._lg.labgrid_coordinator_pb2, f"{method}Request")(placename=place)

        async def work(session: Any) -> None:
            await self._request(session, getattr(session.stub, method)(request))

        self.run(work)

    async def _request(self, session: Any, call: Awaitable[Any]) -> None:
        try:
            await call
        except self._lg.grpc.aio.AioRpcError as exc:
            if exc.code() == self._lg.grpc.StatusCode.UNAVAILABLE:
                raise self._lg.ServerError(exc.details()) from None
            raise LabRefused(exc.details() or str(exc.code())) from None
        await session.sync_with_coordinator()  # our view shows the change before we return


class LabRefused(Exception):
    """The coordinator refused a request (a place already acquired, reserved, failed resources)."""


def _place_view(place: Any) -> PlaceView:
    return PlaceView(
        name=place.name,
        tags=dict(place.tags),
        comment=place.comment or "",
        acquired=place.acquired or None,
        changed=float(place.changed),
        acquired_resources=[(str(e), str(g), str(c), str(n)) for e, g, c, n in place.acquired_resources],
        matches=[str(m) for m in place.matches],
    )


_CLIENTS: dict[str, LabClient] = {}
_CLIENTS_LOCK = threading.Lock()


def client_for(address: str) -> LabClient:
    """The process's one ``LabClient`` for ``address`` (made on first use)."""
    with _CLIENTS_LOCK:
        found = _CLIENTS.get(address)
        if found is None:
            found = _CLIENTS[address] = LabClient(address)
        return found


def close_all() -> None:
    """Stop every coordinator session of this process and its thread (places held stay held)."""
    with _CLIENTS_LOCK:
        clients = list(_CLIENTS.values())
        _CLIENTS.clear()
    for client in clients:
        client.close()
