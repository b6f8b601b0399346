"""serial-mcp: an MCP server that gives agents safe, lossless, fast access to serial ports."""

__version__ = "0.1.0"
