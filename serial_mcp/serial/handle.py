"""PortHandle: the one interface between the engine and a real (or fake) port.

The pump thread calls ``read_chunk`` in a loop; everything else is called from worker threads
under the connection's locks. A handle never buffers bytes of its own beyond what the OS does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from serial_mcp.core.settings import SerialSettings


class PortEOF(Exception):
    """The far end went away (EOF, hang-up, socket closed)."""


@runtime_checkable
class PortHandle(Protocol):
    """An open port. Errors are raised as ``OSError`` (or ``PortEOF`` for an orderly end)."""

    name: str

    def read_chunk(self) -> bytes:
        """Block until bytes arrive and return them; ``b""`` after ``interrupt`` (or a read timeout)."""
        ...

    def interrupt(self) -> None:
        """Make a blocked (or the next) ``read_chunk`` return ``b""`` promptly. Thread-safe.

        The pump uses it to stop, and to run work between two reads (``capture_boot``'s mark).
        """
        ...

    def write(self, data: bytes) -> int:
        """Write all of ``data`` (blocking); return the count written."""
        ...

    def reset_input(self) -> None: ...

    def reset_output(self) -> None: ...

    def apply_settings(self, settings: SerialSettings) -> None: ...

    def set_dtr(self, level: bool) -> None: ...

    def set_rts(self, level: bool) -> None: ...

    def set_break(self, level: bool) -> None:
        """Hold (True) or release (False) a BREAK condition on TX."""
        ...

    def modem_lines(self) -> dict[str, bool | None]:
        """Input lines cts, dsr, ri, cd; None where the port has none (PTYs, sockets)."""
        ...

    def close(self) -> None: ...


# --- Optional capabilities -------------------------------------------------------------------
# A handle may offer more than ``PortHandle``; the engine asks with ``isinstance`` against these
# protocols (never ``getattr``), so what a handle offers is declared here and tested
# (tests/unit/test_handle_capabilities.py) for the system, fake, simulated and replay handles.


@runtime_checkable
class BoundedWrite(Protocol):
    """Writes that give up at a deadline or when cancelled (a real port whose far end stopped)."""

    def write_within(
        self,
        data: bytes,
        timeout: float | None,
        cancel: threading.Event | None = None,
        *,
        stall: float | None = None,
    ) -> int:
        """Write ``data`` within ``timeout`` seconds, giving up when no byte was taken for ``stall``
        seconds; raise ``WriteStopped`` with the count sent."""
        ...

    def wake_writer(self) -> None:
        """Make a blocked ``write_within`` look at its cancel event now. Thread-safe."""
        ...


@runtime_checkable
class NonBlockingWrite(Protocol):
    """Writes what the port takes at once, never blocking (a PTY or socket with room)."""

    def write_nowait(self, data: bytes) -> int: ...


@runtime_checkable
class Lingering(Protocol):
    """Keeps reading for ``seconds`` after the far end hung up (a PTY whose writer closed)."""

    def linger(self, seconds: float) -> None: ...


@runtime_checkable
class LowLatencyAware(Protocol):
    """Reports whether the kernel's low-latency mode was set (True/False) or not asked for (None)."""

    low_latency: bool | None


@runtime_checkable
class DeviceNode(Protocol):
    """Open on a character device node: which one (its real path and ``st_rdev``: a reopen must find the same
    device), whether it is held exclusively (TIOCEXCL; None: not a tty), and a watch that calls back when
    another program opens the node (False where it cannot be watched) — issue 36.5, 36.8."""

    device_id: tuple[str, int] | None
    exclusive: bool | None

    def watch_opens(self, callback: Callable[[], None]) -> bool: ...


@runtime_checkable
class ReportsProgress(Protocol):
    """A played-back device reports where it is (``get_status``'s ``replay`` field)."""

    def status(self) -> dict[str, Any]: ...


@runtime_checkable
class LeaseHolder(Protocol):
    """Holds something beyond the port that outlives one handle (a labgrid place): each connection
    takes a hold when it opens and lets go (the returned function) when it closes — not when a
    reconnect drops the handle."""

    def hold_lease(self) -> Callable[[], None]: ...


@runtime_checkable
class LabControls(Protocol):
    """The board's power switch and digital outputs, switched in the lab (labgrid://); blocking."""

    def power(self, on: bool, name: str | None = None) -> None: ...

    def digital_output(self, level: bool, name: str | None = None) -> None: ...


CAPABILITIES: tuple[type, ...] = (
    BoundedWrite,
    NonBlockingWrite,
    Lingering,
    LowLatencyAware,
    DeviceNode,
    ReportsProgress,
    LeaseHolder,
    LabControls,
)


def low_latency(handle: PortHandle) -> bool | None:
    """The handle's low-latency state, None where it has no such thing."""
    return handle.low_latency if isinstance(handle, LowLatencyAware) else None


class Opener(Protocol):
    """Turns a port name or URL plus settings into an open ``PortHandle`` (the injectable edge)."""

    def open(self, port: str, settings: SerialSettings) -> PortHandle: ...
