"""The message streams between the stdio transport and the SDK's session, one turn shorter.

They are the SDK's context streams (``mcp.shared._context_streams``): each message carries its
sender's ``contextvars`` context to the receiver, as on the SDK's own stdio transport. The one
difference is on the send side: anyio's ``send`` takes a checkpoint turn before it looks for a
receiver, so every request and every reply cost one event-loop iteration more than they need.
``HandOverSendStream`` hands an item straight to a receiver that already waits, and falls back to
``send`` (checkpoint, then wait) only when none does. ``ReplayReceiveStream`` gives messages
already taken from a stream back in front of it (``era_loop``'s peek at the first request).
"""

from __future__ import annotations

import contextvars
from types import TracebackType
from typing import Generic, Protocol, TypeVar

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from serial_mcp.mcp import sdk_private

T = TypeVar("T")
_S = TypeVar("_S", bound="_Closable")


class _Closable(Protocol):
    async def aclose(self) -> None: ...


class _ClosedOnExit:
    """``async with stream:`` closes it on the way out, as anyio's streams do."""

    __slots__ = ()

    async def __aenter__(self: _S) -> _S:
        return self

    async def __aexit__(
        self: _Closable,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class HandOverSendStream(_ClosedOnExit, Generic[T]):
    """``ContextSendStream`` without the checkpoint turn when a receiver is already waiting."""

    __slots__ = ("_inner",)

    def __init__(self, inner: MemoryObjectSendStream[tuple[contextvars.Context, T]]) -> None:
        self._inner = inner

    async def send(self, item: T) -> None:
        envelope = (contextvars.copy_context(), item)
        try:
            self._inner.send_nowait(envelope)  # closed or broken: raises just as send would
        except anyio.WouldBlock:  # nobody waits: send as anyio does (checkpoint, then wait)
            await self._inner.send(envelope)

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()


def hand_over_streams() -> tuple[HandOverSendStream[T], sdk_private.ContextReceiveStream[T]]:
    """An unbuffered pair, like the SDK's ``create_context_streams[T](0)``; the element type comes
    from the variables it is assigned to."""
    send, receive = anyio.create_memory_object_stream[tuple[contextvars.Context, T]](0)
    return HandOverSendStream(send), sdk_private.ContextReceiveStream(receive)


class ReplayReceiveStream(_ClosedOnExit, Generic[T]):
    """``read_stream`` with ``lead`` (messages already taken from it, each with its sender's
    context) in front: what the SDK's relay task delivers, without a task in between."""

    __slots__ = ("_inner", "_lead", "last_context")

    def __init__(
        self, lead: list[tuple[contextvars.Context, T]], read_stream: sdk_private.ContextReceiveStream[T]
    ) -> None:
        self._lead = lead[::-1]  # popped from the end
        self._inner = read_stream
        self.last_context: contextvars.Context | None = None  # the dispatcher reads it per message

    async def receive(self) -> T:
        if self._lead:
            self.last_context, item = self._lead.pop()
            return item
        item = await self._inner.receive()
        self.last_context = self._inner.last_context
        return item

    def __aiter__(self) -> ReplayReceiveStream[T]:
        return self

    async def __anext__(self) -> T:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._lead.clear()
        await self._inner.aclose()
