"""The server's opener stack exactly as ``cli.serve`` builds it (``policy_opener``: allowlist, URL
schemes, capture dir), so the attack tests run against production wiring through the in-process
MCP client."""

from __future__ import annotations

from pathlib import Path

from mcp.server.mcpserver import MCPServer

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.handle import Opener
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.policy import PortPolicy, policy_opener
from serial_mcp.serial.ports import PortInfo


def production_opener(
    capture_dir: Path | None = None,
    allowlist: list[str] | None = None,
    enabled_schemes: frozenset[str] = frozenset(),
) -> Opener:
    policy = PortPolicy.of(allowlist=allowlist, enable_url_schemes=enabled_schemes, capture_dir=capture_dir)
    return policy_opener(policy, no_ports)


def no_ports() -> list[PortInfo]:
    return []


def production_server(
    capture_dir: Path | None = None,
    allowlist: list[str] | None = None,
    enabled_schemes: frozenset[str] = frozenset(),
    *,
    read_only: bool = False,
) -> MCPServer:
    opener = production_opener(capture_dir, allowlist, enabled_schemes)
    return build_server(ConnectionManager(opener), read_only=read_only, port_lister=no_ports)
