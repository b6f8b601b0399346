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
        """Block until bytes arrive and return them; ``b""`` only after ``cancel_read``."""
        ...

    def cancel_read(self) -> None:
        """Make a blocked ``read_chunk`` return ``b""`` promptly (thread-safe)."""
        ...

    def write(self, data: bytes) -> int:
        """Write all of ``data`` (blocking); return the count written."""
        ...

    def reset_input(self) -> None: ...

    def reset_output(self) -> None: ...

    def apply_settings(self, settings: SerialSettings) -> None: ...

    def modem_lines(self) -> dict[str, bool | None]:
        """Input lines cts, dsr, ri, cd; None where the port has none (PTYs, sockets)."""
        ...

    def close(self) -> None: ...


class Opener(Protocol):
    """Turns a port name or URL plus settings into an open ``PortHandle`` (the injectable edge)."""

    def open(self, port: str, settings: SerialSettings) -> PortHandle: ...
