"""The message streams between the stdio transport and the SDK's session, one turn shorter.

They are the SDK's context streams (``mcp.shared._context_streams``): each message carries its
sender's ``contextvars`` context to the receiver, as on the SDK's own stdio transport. The one
difference is on the send side: anyio's ``send`` takes a checkpoint turn before it looks for a
receiver, so every request and every reply cost one event-loop iteration more than they need.
``HandOverSendStream`` hands an item straight to a receiver that already waits, and falls back to
``send`` (checkpoint, then wait) only when none does.
"""

from __future__ import annotations

import contextvars
from types import TracebackType
from typing import Generic, TypeVar

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from mcp.shared._context_streams import ContextReceiveStream  # as the SDK's stdio_server

T = TypeVar("T")


class HandOverSendStream(Generic[T]):
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

    async def __aenter__(self) -> HandOverSendStream[T]:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def hand_over_streams() -> tuple[HandOverSendStream[T], ContextReceiveStream[T]]:
    """An unbuffered pair, like the SDK's ``create_context_streams[T](0)``; the element type comes
    from the variables it is assigned to."""
    send, receive = anyio.create_memory_object_stream[tuple[contextvars.Context, T]](0)
    return HandOverSendStream(send), ContextReceiveStream(receive)
