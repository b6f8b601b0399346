"""Resource-updated notifications to both protocol eras, coalesced so a flood is not a storm.

2026-07-28 clients listen through ``subscriptions/listen`` (the SDK's subscription bus); 2025-11-25
clients send ``resources/subscribe``, which MCPServer does not implement, so it is registered here
on the low-level server (GUIDE §2.7). Notifications are hints: no payload, no cursor moves.
``poke`` may be called from any thread. The first poke of a URI notifies at once; further pokes
within ``min_interval`` collapse into one trailing notification, so a flood costs ~4 per second.
While a URI's last notification is still being sent (a client that stopped reading its stdout),
no second one starts: the pokes collapse into one that follows it, so nothing piles up.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import defaultdict
from typing import Any

from mcp.server.connection import Connection as McpConnection
from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated
from mcp_types import EmptyResult, SubscribeRequestParams, UnsubscribeRequestParams

from serial_mcp.mcp import sdk_private

log = logging.getLogger(__name__)

MIN_INTERVAL = 0.25  # seconds between two notifications of one URI


class CountingBus(InMemorySubscriptionBus):
    """The SDK's in-memory bus, plus "is anybody listening?" so idle work can be skipped."""

    @property
    def has_listeners(self) -> bool:
        return sdk_private.has_listeners(self)


class Notifier:
    """Fans ``resources/updated`` out to listen streams and legacy subscribers."""

    def __init__(self, bus: CountingBus, min_interval: float = MIN_INTERVAL) -> None:
        self.bus = bus
        self.min_interval = min_interval
        self.legacy: dict[str, set[McpConnection]] = defaultdict(set)
        self.sent = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._cooling: set[str] = set()  # notified less than min_interval ago
        self._dirty: set[str] = set()  # poked again while cooling: one more notification due
        self._pending_lock = threading.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        self._sending: dict[str, asyncio.Task[None]] = {}  # each URI's notification being sent

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def install(self, server: MCPServer) -> None:
        """Register resources/subscribe and resources/unsubscribe for 2025-era clients."""

        async def on_subscribe(ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
            uri = str(params.uri)
            conn: McpConnection = sdk_private.client_connection(ctx)
            if conn not in self.legacy[uri]:
                self.legacy[uri].add(conn)
                conn.exit_stack.callback(self.legacy[uri].discard, conn)  # pruned when the client goes
            return EmptyResult()

        async def on_unsubscribe(ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
            self.legacy[str(params.uri)].discard(sdk_private.client_connection(ctx))
            return EmptyResult()

        if not sdk_private.VERIFIED:
            sdk_private.warn_unverified()
            return  # 2026-era clients subscribe through the SDK's own listen(); 2025-era ones cannot
        low = sdk_private.lowlevel(server)
        low.add_request_handler("resources/subscribe", SubscribeRequestParams, on_subscribe)
        low.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, on_unsubscribe)

    def watched(self, uri: str) -> bool:
        """Could a notification for ``uri`` reach anyone?"""
        return self.bus.has_listeners or bool(self.legacy.get(uri))

    async def publish(self, uri: str) -> None:
        """Send now (on the loop)."""
        self.sent += 1
        await self.bus.publish(ResourceUpdated(uri=uri))
        for conn in list(self.legacy.get(uri, ())):
            await conn.send_resource_updated(uri)

    def poke(self, uri: str) -> None:
        """Ask for a notification of ``uri``: now, or once at the end of the current interval."""
        loop = self._loop
        if loop is None or not self.watched(uri):
            return
        with self._pending_lock:
            if uri in self._cooling:
                self._dirty.add(uri)
                return
            self._cooling.add(uri)
        try:
            loop.call_soon_threadsafe(self._fire, uri)
        except RuntimeError:  # loop closed: the server is shutting down
            pass

    def _fire(self, uri: str) -> None:
        assert self._loop is not None
        sending = self._sending.get(uri)
        if sending is not None and not sending.done():  # the last one is not out yet: one more after it
            with self._pending_lock:
                self._dirty.add(uri)
        else:
            task = self._loop.create_task(self.publish(uri))
            self._tasks.add(task)
            self._sending[uri] = task
            task.add_done_callback(self._tasks.discard)
            task.add_done_callback(lambda done: self._sent(uri, done))
        self._loop.call_later(self.min_interval, self._cooled, uri)

    def _sent(self, uri: str, task: asyncio.Task[None]) -> None:
        if self._sending.get(uri) is task:
            del self._sending[uri]

    def _cooled(self, uri: str) -> None:
        with self._pending_lock:
            again = uri in self._dirty
            self._dirty.discard(uri)
            if not again:
                self._cooling.discard(uri)
        if again:
            self._fire(uri)
