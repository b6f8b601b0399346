"""The package's version, in a module of its own so the port machinery (``serial/``) can name it
without importing the package face (``serial_mcp/__init__``)."""

from __future__ import annotations

from typing import Final

__version__: Final = "0.1.0"
