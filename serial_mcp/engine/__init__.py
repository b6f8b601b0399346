"""The operations layer: every front door (MCP tools, CLI commands, ``serial_mcp.Engine``, the pytest
plugin) calls these operations; none holds logic the others lack. See docs/architecture.md."""
