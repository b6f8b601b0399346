"""What every operation works with: the connection manager, the stores, the port lister, the policy.

Built once per front door (MCP server, CLI command, ``serial_mcp.Engine``) and passed to the
operations in ``engine/ops_*.py``. ``connection`` is the one way an operation gets a connection: it
checks the caller's right to do what the operation needs.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

from serial_mcp.engine.access import AccessPolicy, Caller, Need, require_access
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.firmware_elf import ElfScope
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.ports import PortInfo, list_system_ports
from serial_mcp.store.captures import CaptureStore
from serial_mcp.store.profiles import ProfileStore

if TYPE_CHECKING:
    import asyncio

# progress(done, total or None, message): how a long operation reports; MCP maps it to notifications
Progress = Callable[[float, float | None, str], Awaitable[None]]


async def no_progress(done: float, total: float | None, message: str) -> None:
    return None


# How the call running now reports progress: a front door that can show it (MCP's progress
# notifications) sets it for the call; operations report through ``report_progress``.
progress_reporter: ContextVar[Progress] = ContextVar("serial_mcp_progress", default=no_progress)


async def report_progress(done: float, total: float | None, message: str) -> None:
    """Tell the caller how far a long operation got (a no-op when nobody listens)."""
    await progress_reporter.get()(done, total, message)


@dataclass(eq=False)
class Hold:
    """A connection a call opened by port (issue 39, ``engine/held.py``): what its open answered
    (``open`` answers it again when it adopts it), its idle deadline, how many calls use it now."""

    conn: Connection
    idle_s: float
    opened: tuple[str | None, str, str | None]  # profile, profile action, hint (results.open_result)
    scope: anyio.CancelScope
    busy: int = 0
    task: asyncio.Task[None] | None = None

    def restart(self) -> None:
        """Its idle clock starts again now (never runs out while a call uses it)."""
        self.scope.deadline = math.inf if self.busy else anyio.current_time() + self.idle_s


@dataclass
class Services:
    manager: ConnectionManager
    captures: CaptureStore = field(default_factory=lambda: CaptureStore(None))
    profiles: ProfileStore | None = None
    port_lister: Callable[[], list[PortInfo]] = list_system_ports
    policy: AccessPolicy = field(default_factory=AccessPolicy)
    elf_scope: ElfScope = field(default_factory=ElfScope)  # where open(elf=...) may read (issue 24)
    # issue 39: a connection a call opened by port closes after this long unused (engine/held.py)
    held_idle_s: float = 60.0
    held: dict[str, Hold] = field(default_factory=dict)  # those connections' holds, by connection id

    def writing(self, caller: Caller, connection_id: str, tool: str, need: Need = "control") -> Connection:
        """The connection ``tool`` writes to or drives: refused in read-only mode, then as ``connection``."""
        self.policy.require_writable(tool)
        return self.connection(caller, connection_id, need)

    def connection(self, caller: Caller, connection_id: str, need: Need = "read") -> Connection:
        """The connection ``connection_id`` (id or port name), if ``caller`` may do ``need`` on it."""
        conn = self.manager.get(connection_id)
        if need != "read":
            require_access(caller, conn.owner, conn.share, need, conn.id)  # type: ignore[arg-type]
        return conn
