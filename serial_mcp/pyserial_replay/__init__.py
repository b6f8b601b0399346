"""pyserial URL handler for ``replay://``: any pyserial program can open a capture file as a port.

Call ``register()`` once; afterwards ``serial.serial_for_url("replay://boot.jsonl?speed=10")``
plays the capture like a device (see ``serial_mcp.serial.replay`` for the modes).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["PACKAGE", "register"]

PACKAGE = __name__
captures_dir: Path | None = None  # where relative capture paths are tried after the working directory


def register(captures: Path | None = None) -> None:
    """Add this package to ``serial.protocol_handler_packages`` (idempotent); ``captures`` sets the
    directory tried for relative paths after the working directory (default ``./captures``)."""
    global captures_dir
    import serial

    if captures is not None:
        captures_dir = captures
    if PACKAGE not in serial.protocol_handler_packages:
        serial.protocol_handler_packages.append(PACKAGE)
