"""PortHandle: the one interface between the engine and a real (or fake) port.

The pump thread calls ``read_chunk`` in a loop; everything else is called from worker threads
under the connection's locks. A handle never buffers bytes of its own beyond what the OS does.
"""

from __future__ import annotations

from typing import Protocol

from serial_mcp.core.settings import SerialSettings


class PortEOF(Exception):
    """The far end went away (EOF, hang-up, socket closed)."""


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


class Opener(Protocol):
    """Turns a port name or URL plus settings into an open ``PortHandle`` (the injectable edge)."""

    def open(self, port: str, settings: SerialSettings) -> PortHandle: ...
