"""The port's lifecycle, as a base of ``Connection``: losing the port, the reconnect loop, lending
it out and taking it back (``detach`` / ``resume``), ``reconnect_now`` — every reopen keeps the ring,
cursors and offsets (offsets keep increasing, nothing is reset silently).

``open`` → (read/write error) → ``reconnecting`` (with a policy) or ``disconnected`` → ``open``
again after a successful reopen → ``closed``; ``released`` while the port is lent to another program
(``serial.lending``). A reopen that followed the device to another node (``serial.following``)
says so first (event ``moved``); any other reopen must find the device first opened (its real path
and device number: a link repointed meanwhile is refused, never a silent switch).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import anyio

from serial_mcp import messages
from serial_mcp.core.reconnect import STABLE_S, ReconnectPolicy
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import AccessError, DeviceError, ErrorCode, PortError, SerialMcpError
from serial_mcp.serial import holders
from serial_mcp.serial.following import Follower
from serial_mcp.serial.handle import DeviceNode, PortHandle

if TYPE_CHECKING:
    from serial_mcp.core.eventlog import LogEvent
    from serial_mcp.core.ring import RxRing
    from serial_mcp.serial.event_watch import EventWatch
    from serial_mcp.serial.judged import DeviceId
    from serial_mcp.serial.port_controls import PortLines
    from serial_mcp.serial.pump import RxPump
    from serial_mcp.serial.tx import TxSession

log = logging.getLogger("serial_mcp.serial.connection")

State = Literal["open", "reconnecting", "disconnected", "released", "closed"]
MAX_INTRUDERS = 16  # other programs listed in get_status (each is also an event in the log)


class PortLifecycle:
    """Loss, reconnect, lend and take back, for ``Connection`` (which holds the fields below)."""

    if TYPE_CHECKING:
        id: str
        port: str
        handle: PortHandle

        @property
        def settings(self) -> SerialSettings: ...

        loop: asyncio.AbstractEventLoop
        ring: RxRing
        tx: TxSession
        lines: PortLines
        events: EventWatch
        state: State
        last_error: str | None
        lend: Any
        reconnect_policy: ReconnectPolicy | None
        reconnect_attempts: int
        reconnects: int
        _attached_at: float | None
        _reopen: Callable[[SerialSettings], PortHandle] | None
        _reconnect_task: asyncio.Task[None] | None
        _generation: int
        _pump: RxPump

        def record(self, kind: str, data: bytes | None = None, **fields: Any) -> LogEvent: ...

        def current_state(self) -> State: ...

        def _wake(self) -> None: ...

        def _new_pump(self, handle: PortHandle) -> RxPump: ...

    def _port_lost(self, error: BaseException, generation: int | None = None) -> None:
        """The port failed (read/write error, EOF): disconnected, or reconnecting under a policy."""
        if self.state != "open" or (generation is not None and generation != self._generation):
            return
        self.last_error = f"{type(error).__name__}: {error}"
        self.record("error", message=self.last_error)
        self.events.end_of_stream()  # a crash that took the port with it is reported now
        log.warning("connection %s (%s) lost its port: %s", self.id, self.port, self.last_error)
        self._generation += 1
        with contextlib.suppress(Exception):  # the device is already gone
            self._pump.stop(join_timeout=0)
        with contextlib.suppress(Exception):
            self.handle.close()
        if self.reconnect_policy is not None and self._reopen is not None:
            self.state = "reconnecting"
            if self._stayed_up():  # a far end that accepts and drops at once is not "back"
                self.reconnect_attempts = 0
            self._reconnect_task = self.loop.create_task(self._reconnect_loop(self.reconnect_policy))
        else:
            self.state = "disconnected"
        self._wake()

    def _stayed_up(self) -> bool:
        """Was the port re-established for real: up for ``STABLE_S`` since the last reconnect,
        whatever it received meanwhile? Only then do the attempt counter and backoff start over."""
        if self._attached_at is None:
            return True  # the first loss since open
        return time.monotonic() - self._attached_at >= STABLE_S

    def note_write_error(self, error: BaseException) -> None:
        """A write failed at the OS level: the port is gone, same as a read error."""
        self._port_lost(error)

    async def _reconnect_loop(self, policy: ReconnectPolicy) -> None:
        while self.state == "reconnecting":
            if policy.max_attempts and self.reconnect_attempts >= policy.max_attempts:
                self.state = "disconnected"
                self.last_error = messages.RECONNECT_GAVE_UP.format(
                    n=self.reconnect_attempts, error=self.last_error
                )
                self.record("error", message=self.last_error)
                self._wake()
                return
            await anyio.sleep(policy.delay_s(self.reconnect_attempts + 1))
            if self.current_state() != "reconnecting":  # close() or reconnect_now() ran meanwhile
                return
            self.reconnect_attempts += 1
            try:
                await self._reopen_once()
            except Exception as exc:
                self.last_error = f"reconnect attempt {self.reconnect_attempts}: {exc}"
                log.info("connection %s: %s", self.id, self.last_error)
                self._wake()  # whoever waits on the connection sees why it is not back

    async def _reopen_once(self, event: str = "reconnect", **fields: Any) -> None:
        assert self._reopen is not None
        handle = await anyio.to_thread.run_sync(self._reopen_same, self.settings)
        if self.state not in ("reconnecting", "disconnected", "released"):  # closed meanwhile
            await anyio.to_thread.run_sync(handle.close)
            return
        self._attach(handle, event, **fields)

    def _attach(self, handle: PortHandle, event: str = "reconnect", **fields: Any) -> None:
        """Continue on a freshly opened handle: same ring, cursors and offsets. A reopen that
        followed the device to another node (``reopen.path``) says so first (event ``moved``)."""
        moved_to = getattr(self._reopen, "path", None)
        if isinstance(moved_to, str) and moved_to != self.port:
            self.record("moved", old=self.port, new=moved_to, offset=self.ring.end_offset)
            log.info("connection %s: the device moved from %s to %s", self.id, self.port, moved_to)
            self.port = moved_to
        self.handle = handle
        self.tx.handle = handle
        self.lines.attach(handle)
        self._generation += 1
        self._pump = self._new_pump(handle)
        self.state = "open"
        if event == "reconnect":
            self.reconnects += 1
        self._attached_at = time.monotonic()
        self.watch_opens()
        self._pump.start()
        self.record(event, attempts=self.reconnect_attempts, offset=self.ring.end_offset, **fields)
        log.info(
            "connection %s reconnected to %s after %d attempt(s)", self.id, self.port, self.reconnect_attempts
        )
        self._wake()

    async def detach(self, state: Literal["released", "reconnecting"], event: str, **fields: Any) -> None:
        """Stop the pump and close the OS handle, keeping the ring, cursors, offsets, recording and
        responders: ``released`` (lent to another program) or ``reconnecting`` (after a reset that
        makes the board re-enumerate). ``event`` is logged (and recorded) with the RX edge."""
        if self._reopen is None:
            raise DeviceError(
                ErrorCode.NOT_SUPPORTED,
                messages.RECONNECT_UNSUPPORTED.format(id=self.id),
                connection_id=self.id,
            )
        self._generation += 1
        await anyio.to_thread.run_sync(self._pump.stop)
        with contextlib.suppress(Exception):  # a device already gone
            await anyio.to_thread.run_sync(self.handle.close)
        self.state = state
        self.record(event, offset=self.ring.end_offset, **fields)
        self._wake()

    async def resume(self, event: str, **fields: Any) -> None:
        """Reopen a ``released`` port; if that fails, the reconnect policy (or the default one)
        keeps trying, so a board still re-enumerating after a flash is picked up when it is back."""
        try:
            await self._reopen_once(event, **fields)
        except Exception as exc:
            self.last_error = f"{event}: {exc}"
            self.record("error", message=self.last_error)
            self.keep_reconnecting()

    def keep_reconnecting(self) -> None:
        """Let the reconnect loop bring the port back (under the connection's policy, else the default)."""
        if self.state == "closed":
            return
        self.state = "reconnecting"
        self.reconnect_attempts = 0
        if self._reconnect_task is not None:
            self._reconnect_task.cancel()
        policy = self.reconnect_policy or ReconnectPolicy()
        self._reconnect_task = self.loop.create_task(self._reconnect_loop(policy))
        self._wake()

    async def reconnect_now(self) -> None:
        """Reopen the port now (also from ``open``: drops the handle first). Raises on failure."""
        if self.state == "closed":
            raise PortError(
                ErrorCode.CONNECTION_CLOSED,
                messages.CONNECTION_CLOSED.format(id=self.id),
                connection_id=self.id,
            )
        if self._reopen is None:
            raise DeviceError(
                ErrorCode.NOT_SUPPORTED,
                messages.RECONNECT_UNSUPPORTED.format(id=self.id),
                connection_id=self.id,
            )
        if self.lend is not None:  # a lent port taken back by hand
            self.lend.cancel()
        if self._reconnect_task is not None:
            self._reconnect_task.cancel()
            self._reconnect_task = None
        if self.state == "open":
            self._generation += 1
            await anyio.to_thread.run_sync(self._pump.stop)
            with contextlib.suppress(Exception):
                await anyio.to_thread.run_sync(self.handle.close)
            self.state = "disconnected"
        self.reconnect_attempts += 1
        try:
            await self._reopen_once()
        except SerialMcpError as exc:
            self.state = "disconnected"
            self.last_error = exc.message
            self._wake()
            raise
        except Exception as exc:
            self.state = "disconnected"
            self.last_error = str(exc)
            self._wake()
            raise PortError(
                ErrorCode.PORT_OPEN_FAILED,
                messages.RECONNECT_FAILED.format(id=self.id, error=exc),
                connection_id=self.id,
            ) from exc

    @property
    def reopener(self) -> Callable[[SerialSettings], PortHandle] | None:
        """How the port is reopened (a ``serial.following.Follower`` for a device followed by identity;
        otherwise by its name, refused when that names another device now)."""
        if self._reopen is None or isinstance(self._reopen, Follower):
            return self._reopen
        return self._reopen_same

    @property
    def opened_device(self) -> DeviceId | None:
        """The real path and device number of the device first opened (None: not a device node).
        Taken from the first handle, which every reopen replaces only after this was asked."""
        if "_opened_device" not in vars(self):
            self._opened_device = _device_id(self.handle)
        return self._opened_device

    def _reopen_same(self, settings: SerialSettings) -> PortHandle:
        """Reopen (blocking: a worker thread). A port not followed by USB identity must be the device
        first opened: the same node and device number (a replugged adapter at the same node is),
        not whatever its name (a symlink) points at now."""
        assert self._reopen is not None
        first = self.opened_device
        handle = self._reopen(settings)
        now = _device_id(handle)
        if isinstance(self._reopen, Follower) or first is None or now is None or now == first:
            return handle
        with contextlib.suppress(Exception):
            handle.close()
        log.warning("connection %s: %s is %s now, not %s: refused", self.id, self.port, now, first)
        refusal = messages.PORT_CHANGED_REOPEN.format(port=self.port, first=first[0], now=now[0])
        raise AccessError(ErrorCode.NOT_ALLOWED, refusal)

    # --- other programs opening the node we hold (issue 36.8) -----------------------------------

    @property
    def exclusive(self) -> bool | None:
        """Whether the open port's node is held exclusively (TIOCEXCL); None when not open or not a tty."""
        handle = self.handle
        return handle.exclusive if self.state == "open" and isinstance(handle, DeviceNode) else None

    @property
    def intruders(self) -> list[dict[str, Any]]:
        """Other programs seen opening the node while this connection held it (``get_status``):
        ``pid``, ``program`` (None for a process we may not look at: another user's, or gone)."""
        found: list[dict[str, Any]] = vars(self).setdefault("_intruders", [])
        return found

    def watch_opens(self) -> None:
        """Report another program opening the node we hold, which TIOCEXCL does not stop for a root
        opener or on a driver without it: an ``intruder`` event naming its pid and program."""
        handle = self.handle
        if not isinstance(handle, DeviceNode) or handle.device_id is None:
            return
        device, watch = handle.device_id, handle.watch_opens
        node, loop, me = device[0], self.loop, weakref.ref(self)

        def opened() -> None:  # on the watch's thread: who holds the node now
            seen = [(pid, holders.program_of(pid)) for pid in sorted(holders.holders_of(node))]
            conn = me()
            if conn is not None:
                with contextlib.suppress(RuntimeError):  # the loop is closed: nobody left to tell
                    loop.call_soon_threadsafe(conn._opened_elsewhere, handle, seen)

        watch(opened)

    def _opened_elsewhere(self, handle: PortHandle, seen: list[tuple[int, str | None]]) -> None:
        if handle is not self.handle or self.state != "open":
            return  # that handle was let go meanwhile (lent, lost, closed)
        listed = self.intruders
        known = {i["pid"] for i in listed}
        unseen = next((i for i in listed if i["pid"] is None), None)
        fresh: list[tuple[int | None, str | None]] = [(p, n) for p, n in seen if p not in known]
        if not seen:  # gone already, or another user's process (root's /proc/PID/fd is closed to us)
            if unseen is not None:
                unseen["opens"] += 1
                return
            fresh = [(None, None)]
        at = datetime.now(UTC).isoformat(timespec="seconds")
        for pid, program in fresh:
            if len(listed) < MAX_INTRUDERS:
                listed.append({"pid": pid, "program": program, "at": at, "opens": 1})
            self.record("intruder", pid=pid, program=program, offset=self.ring.end_offset)
            log.warning("connection %s: %s opened by pid %s (program %r)", self.id, self.port, pid, program)
        self._wake()


def _device_id(handle: object) -> DeviceId | None:
    """The device node ``handle`` is open on (None: not a device node, e.g. a socket or a simulator)."""
    return handle.device_id if isinstance(handle, DeviceNode) else None
