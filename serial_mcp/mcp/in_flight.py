"""InFlight: at most ``MAX_IN_FLIGHT`` of a stdio client's requests are being served at once.

The SDK's serving loop starts a task for every request it receives and never waits for one to
finish. A client that writes requests faster than it reads the answers (a flood, or a client that
stopped reading stdout) therefore made the server hold a task and an answer for every request it
had read: measured, 1.2 million ``list_connections`` lines grew the server from 90 MiB to 490 MiB
in 16 s, still rising. With this bound the stdin reader waits for a free slot before it hands the
next request on; the pipe then fills and the client's own writes block, which is the backpressure
a pipe is for. Every request is still answered, in order of arrival.

A slot is taken when a request is handed to the SDK and given back when its answer (a result or an
error with its id) has been written, or when the client cancels it (a cancelled request is never
answered). Notifications, the client's answers to our requests, and lines we refuse ourselves take
no slot. Ids are counted, not kept unique: a client that reuses an id still gets each slot back.

A request waits only while 256 others are being served, and each of those ends within its own
timeout (a read's is at most 10 minutes). The server sends no requests of its own that the client
must answer first, so nothing in flight can wait on a line queued behind the bound. The one request
that stays open for good, ``subscriptions/listen`` (2026-07-28), takes no such slot: a client may
hold ``MAX_LISTENS`` of them, and one more is refused at once instead of waiting (256 of them had
taken every slot, and then the server read nothing more, not even the end of its input).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import anyio
import mcp_types as types

from serial_mcp import messages

MAX_IN_FLIGHT = 256  # far beyond any agent (a few) or test suite (tens) in flight at once
MAX_LISTENS = 16  # subscriptions/listen streams a client holds open at once (one is usual)
LISTEN = "subscriptions/listen"


class InFlight:
    """The requests handed on and not yet answered, by id; ``admit`` waits while ``limit`` are."""

    def __init__(self, limit: int = MAX_IN_FLIGHT, max_listens: int = MAX_LISTENS) -> None:
        self.limit = limit
        self.max_listens = max_listens
        self._ids: Counter[Any] = Counter()
        self._listens: Counter[Any] = Counter()
        self._total = 0
        self._freed = anyio.Event()
        self._waiting = 0  # tasks waiting on _freed: an answer with nobody waiting signals nothing

    @property
    def count(self) -> int:
        return self._total

    @property
    def listens(self) -> int:
        return sum(self._listens.values())

    async def drained(self) -> None:
        """Wait until every request handed on has been answered (listen streams do not count)."""
        while self._total > 0:
            await self._wait_freed()

    async def admit(self, message: types.JSONRPCMessage) -> types.JSONRPCError | None:
        """Before ``message`` goes to the SDK: a request waits for a free slot and takes it. The
        answer to send instead, when it is a ``subscriptions/listen`` past ``max_listens``."""
        if isinstance(message, types.JSONRPCRequest):
            if message.method == LISTEN:
                if self.listens >= self.max_listens:
                    problem = messages.LISTENS_FULL.format(max=self.max_listens)
                    error = types.ErrorData(code=types.INVALID_REQUEST, message=problem)
                    return types.JSONRPCError(jsonrpc="2.0", id=message.id, error=error)
                self._listens[message.id] += 1
                return None
            while self._total >= self.limit:
                await self._wait_freed()
            self._ids[message.id] += 1
            self._total += 1
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            params = message.params if isinstance(message.params, dict) else {}
            request_id = params.get("requestId")
            if isinstance(request_id, int | str) and not isinstance(request_id, bool):
                self._drop(request_id, self._ids.get(request_id, 0) + self._listens.get(request_id, 0))
        return None

    async def _wait_freed(self) -> None:
        self._waiting += 1
        try:
            await self._freed.wait()
        finally:
            self._waiting -= 1

    def answered(self, message: types.JSONRPCMessage) -> None:
        """After ``message`` was written to the client: an answer gives its request's slot back."""
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError) and message.id is not None:
            self._drop(message.id, 1)

    def _drop(self, request_id: int | str, n: int) -> None:
        for held in (self._ids, self._listens):
            taken = min(n, held.get(request_id, 0))
            if taken <= 0:
                continue  # not ours (an answer we wrote for a line we refused), or given back
            n -= taken
            held[request_id] -= taken
            if not held[request_id]:
                del held[request_id]
            if held is self._ids:
                self._total -= taken
                if self._waiting:  # a new anyio.Event costs ~10 us: made only when one was waited on
                    self._freed.set()
                    self._freed = anyio.Event()
