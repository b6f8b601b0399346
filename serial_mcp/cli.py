"""Command line: ``serial-mcp`` serves MCP over stdio (the default).

Nothing but protocol ever reaches stdout while serving; logs go to stderr. A bad flag or a startup
failure prints one line on stderr and exits non-zero.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import NoReturn

from serial_mcp import __version__, messages

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is a single line on stderr and exit code 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"serial-mcp: error: {message} (see serial-mcp --help)\n")
        sys.exit(2)


def build_parser() -> OneLineParser:
    p = OneLineParser(prog="serial-mcp", description=messages.CLI_DESCRIPTION)
    p.add_argument("--version", action="version", version=f"serial-mcp {__version__}")
    p.add_argument(
        "--log-level", default="WARNING", type=str.upper, choices=LOG_LEVELS, help=messages.CLI_LOG_LEVEL
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("serve", help=messages.CLI_SERVE)
    demo = sub.add_parser("demo", help=messages.CLI_DEMO)
    demo.add_argument("--port", default="sim://modem", help=messages.CLI_DEMO_PORT)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr, level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        if args.command == "demo":
            from serial_mcp.demo import run_demo

            return run_demo(args.port)
        return serve_stdio(args.log_level)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        sys.stderr.write(f"serial-mcp: {exc}\n")
        return 1


def serve_stdio(log_level: str) -> int:
    """Serve over stdio until the client closes stdin."""
    from serial_mcp.mcp.server import build_server
    from serial_mcp.serial.manager import ConnectionManager
    from serial_mcp.serial.openers import default_opener

    server = build_server(ConnectionManager(default_opener()), log_level=log_level)  # type: ignore[arg-type]
    server.run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
