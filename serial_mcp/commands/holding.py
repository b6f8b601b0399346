"""Keeping a connection up until the person stops it (Ctrl-C, SIGTERM) or the device goes away."""

from __future__ import annotations

import signal
from collections.abc import Callable

import anyio
from anyio.abc import TaskStatus

from serial_mcp.api import EngineConnection


async def hold(conn: EngineConnection, ready: Callable[[], None]) -> str:
    """Call ``ready`` once Ctrl-C is ours (so a person who sees its output can stop us cleanly),
    then wait. Returns ``"stopped"`` for a signal, or why the port stopped being open."""
    reason = "stopped"
    async with anyio.create_task_group() as tg:

        async def on_signal(*, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                task_status.started()
                async for _ in signals:
                    tg.cancel_scope.cancel()
                    return

        async def on_lost() -> None:
            nonlocal reason
            reason = await conn.wait_lost()
            tg.cancel_scope.cancel()

        await tg.start(on_signal)
        ready()
        tg.start_soon(on_lost)
    return reason
