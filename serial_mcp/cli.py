"""Command line: ``serial-mcp`` serves MCP over stdio (the default); front-door commands in ``commands/``.

Nothing but protocol ever reaches stdout while serving; logs go to stderr. A bad flag or a startup
failure prints one line on stderr and exits non-zero.
"""

from __future__ import annotations

import argparse
import difflib
import logging
import sys
from collections.abc import Sequence
from typing import NoReturn

from serial_mcp import config, messages
from serial_mcp.commands.output import for_person
from serial_mcp.version import __version__


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is a single line on stderr and exit code 2."""

    argv: Sequence[str] = ()  # what main() parses, to name a mistyped option

    def error(self, message: str) -> NoReturn:
        unknown = self.unknown_option() if "invalid choice" in message else None
        if unknown is not None:  # `--http-port 8080`: argparse blamed 8080 as an unknown COMMAND
            close = difflib.get_close_matches(unknown, list(self._option_string_actions), n=1)
            hint = messages.CLI_DID_YOU_MEAN.format(option=close[0]) if close else ""
            message = messages.CLI_UNKNOWN_OPTION.format(option=unknown, hint=hint)
        sys.stderr.write(f"serial-mcp: error: {message} (see serial-mcp --help)\n")
        sys.exit(2)

    def unknown_option(self) -> str | None:
        """The first option before the command that is none of ours (nor an abbreviation of one)."""
        known = self._option_string_actions
        tokens = iter(self.argv)
        for token in tokens:
            if not token.startswith("-") or token == "-":
                return None  # the command comes first: argparse's message stands
            name, has_value = token.split("=", 1)[0], "=" in token
            matches = [action for option, action in known.items() if option.startswith(name)]
            if not matches:
                return name
            if not has_value and matches[0].nargs != 0:
                next(tokens, None)  # that option's value
        return None


MAX_READ_BYTES = 4 * 1024 * 1024  # a read's max_bytes bound (reader.MAX_MAX_BYTES; a test holds them equal)
# the commands that write their data to stdout: with stdout closed they have nowhere to put it
WRITES_STDOUT = frozenset({"demo", "mirror", "replay", "decode", "ports", "identify", "send", "read"})


def max_bytes(text: str) -> int:
    """``--max-bytes``: 1 to the most one read takes (a usage error otherwise, before any port is touched)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_READ_BYTES:
        raise argparse.ArgumentTypeError(messages.CLI_MAX_BYTES_BAD.format(value=text, max=MAX_READ_BYTES))
    return value


def port_argument(parser: argparse.ArgumentParser) -> None:
    """PORT, with every scheme a person may give in its help (``sim://`` first: no hardware needed)."""
    parser.add_argument("device", metavar="PORT", help=messages.CLI_PORT)


def baud_rate_option(parser: argparse.ArgumentParser, default: int | None) -> None:
    """``--baud-rate``, the tools' own name; ``--baud`` (the old spelling) still parses, unlisted."""
    parser.add_argument("--baud-rate", type=int, default=default, metavar="N", help=messages.CLI_BAUD_RATE)
    parser.add_argument(
        "--baud", dest="baud_rate", type=int, default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )


def build_parser() -> OneLineParser:
    p = OneLineParser(prog="serial-mcp", description=messages.CLI_DESCRIPTION)
    p.add_argument("--version", action="version", version=f"serial-mcp {__version__}")
    config.add_options(p)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    sub.add_parser("serve", help=messages.CLI_SERVE)

    demo = sub.add_parser("demo", help=messages.CLI_DEMO)
    demo.add_argument("--port", dest="device", default=None, help=messages.CLI_DEMO_PORT)

    rec = sub.add_parser("record", help=messages.CLI_RECORD)
    port_argument(rec)
    rec.add_argument("-o", "--output", required=True, help=messages.CLI_RECORD_OUTPUT)
    baud_rate_option(rec, 115200)
    rec.add_argument("--note", default=None, help=messages.P_NOTE)

    mir = sub.add_parser("mirror", help=messages.CLI_MIRROR)
    port_argument(mir)
    baud_rate_option(mir, 115200)
    kind = mir.add_mutually_exclusive_group()
    kind.add_argument("--rw", action="store_true", help=messages.CLI_MIRROR_RW)
    kind.add_argument("--rfc2217", action="store_true", help=messages.CLI_MIRROR_RFC2217)
    mir.add_argument("--esp-reset", action="store_true", help=messages.CLI_MIRROR_ESP_RESET)

    rep = sub.add_parser("replay", help=messages.CLI_REPLAY)
    rep.add_argument("file", help=messages.CLI_REPLAY_FILE)
    rep.add_argument("--mode", choices=("timed", "instant", "respond"), default="timed")
    rep.add_argument("--speed", type=float, default=1.0)
    rep.add_argument("--loop", action="store_true")
    rep.add_argument("--pty", action="store_true", help=messages.CLI_REPLAY_PTY)

    dec = sub.add_parser("decode", help=messages.CLI_DECODE)
    dec.add_argument("file", help=messages.CLI_DECODE_FILE)
    dec.add_argument("--protocol", default=None, help=messages.P_PROTOCOL)
    dec.add_argument("--rx-framing", default=None, help=messages.CLI_JSON_OPTION)
    dec.add_argument("--rx-parser", default=None, help=messages.CLI_JSON_OPTION)
    dec.add_argument("--format", choices=("text", "jsonl"), default="text")
    dec.add_argument("--direction", choices=("rx", "tx", "both"), default="both")
    dec.add_argument("--events", action="store_true", help=messages.CLI_DECODE_EVENTS)
    dec.add_argument("--print-filter", default=None, metavar="FILTER", help=messages.CLI_PRINT_FILTER)
    dec.add_argument("--elf", default=None, metavar="ELF", help=messages.CLI_ELF)

    ports = sub.add_parser("ports", help=messages.CLI_PORTS)
    ports.add_argument("--json", action="store_true", help=messages.CLI_JSON)

    ident = sub.add_parser("identify", help=messages.CLI_IDENTIFY)
    ident.add_argument("ports", metavar="PORT", nargs="*", help=messages.CLI_IDENTIFY_PORTS)
    ident.add_argument("--listen-ms", type=int, default=1500, metavar="N", help=messages.P_LISTEN_MS)
    ident.add_argument("--probe", action="store_true", help=messages.P_IDENTIFY_PROBE)
    ident.add_argument("--json", action="store_true", help=messages.CLI_JSON)

    send = sub.add_parser("send", help=messages.CLI_SEND)
    port_argument(send)
    send.add_argument("data", metavar="DATA", nargs="?", help=messages.CLI_SEND_DATA)
    send.add_argument("--power-cycle", action="store_true", help=messages.CLI_POWER_CYCLE)  # issue 25
    send.add_argument("--off-ms", type=int, default=1000, metavar="N", help=messages.CLI_OFF_MS)
    rd = sub.add_parser("read", help=messages.CLI_READ)
    port_argument(rd)
    for one_shot in (send, rd):
        one_shot.add_argument("--expect", metavar="PATTERN", help=messages.CLI_EXPECT)
        one_shot.add_argument("--timeout-ms", type=int, metavar="N", help=messages.CLI_TIMEOUT_MS)
        one_shot.add_argument("--protocol", help=messages.P_PROTOCOL)
        baud_rate_option(one_shot, None)
        one_shot.add_argument(
            "--max-bytes", type=max_bytes, metavar="N", help=messages.CLI_MAX_BYTES.format(max=MAX_READ_BYTES)
        )
        one_shot.add_argument("--json", action="store_true", help=messages.CLI_JSON)

    view = sub.add_parser("view", help=messages.CLI_VIEW)
    view.add_argument("file", help=messages.CLI_VIEW_FILE)
    view.add_argument("-o", "--output", default=None, help=messages.CLI_VIEW_OUTPUT)
    view.add_argument("--protocol", default=None, help=messages.P_PROTOCOL)
    view.add_argument("--rx-framing", default=None, help=messages.CLI_JSON_OPTION)
    view.add_argument("--rx-parser", default=None, help=messages.CLI_JSON_OPTION)
    view.add_argument("--fields", nargs="+", default=None, metavar="FIELD", help=messages.CLI_VIEW_FIELDS)
    view.add_argument("--gap", type=float, default=1.0, metavar="SECONDS", help=messages.CLI_VIEW_GAP)
    view.add_argument("--open", action="store_true", help=messages.CLI_VIEW_OPEN)
    view.add_argument("--print-filter", default=None, metavar="FILTER", help=messages.CLI_PRINT_FILTER)
    view.add_argument("--elf", default=None, metavar="ELF", help=messages.CLI_ELF)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    parser.argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(parser.argv)
    if not _serial_port_placed(args):
        return 2
    try:
        cfg = config.resolve(args)
    except config.ConfigError as exc:
        sys.stderr.write(f"serial-mcp: {exc.message}\n")
        return 2
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    if cfg.log_level != "DEBUG":  # labgrid logs its failures on the root logger; ours name them already
        handler.addFilter(_ours_or_named)
    logging.basicConfig(level=cfg.log_level, handlers=[handler])
    if args.command in WRITES_STDOUT and sys.stdout is None:  # ``serial-mcp send … >&-``
        sys.stderr.write(f"serial-mcp: {messages.CLI_NO_STDOUT.format(command=args.command)}\n")
        return 2
    try:
        if args.command == "demo":
            from serial_mcp.mcp.demo_client import run_demo

            return run_demo(args.device, sys.stdout, config.server_flags(cfg))
        if args.command == "record":
            from serial_mcp.commands.record import run_record

            return run_record(config.port_policy(cfg), args.device, args.output, args.baud_rate, args.note)
        if args.command == "mirror":
            from serial_mcp.commands.mirror import run_mirror

            if args.esp_reset and not args.rfc2217:
                sys.stderr.write(messages.CLI_MIRROR_ESP_RESET_ALONE + "\n")
                return 2
            kind = "rfc2217+esp-reset" if args.esp_reset else "rfc2217" if args.rfc2217 else None
            return run_mirror(config.port_policy(cfg), args.device, args.baud_rate, args.rw, sys.stdout, kind)
        if args.command == "replay":
            from serial_mcp.commands.replay import run_replay

            return run_replay(
                config.port_policy(cfg), args.file, args.mode, args.speed, args.loop, args.pty, sys.stdout
            )
        get = args.__dict__.get  # decode and view: how to frame and parse the file
        decoding: tuple[str | None, str | None, str | None] = (
            get("protocol"),
            get("rx_framing"),
            get("rx_parser"),
        )
        if args.command == "decode":
            from serial_mcp.commands.decode import run_decode

            return run_decode(
                args.file, *decoding, args.format, args.direction, sys.stdout, events=args.events,
                print_filter=args.print_filter, elf=args.elf,
            )  # fmt: skip
        if args.command in ("ports", "identify", "send", "read"):
            from serial_mcp.commands import oneshot

            policy = config.port_policy(cfg)
            if args.command == "ports":
                return oneshot.run_ports(policy, args.json, sys.stdout)
            if args.command == "identify":
                return oneshot.run_identify(
                    policy, args.ports, args.listen_ms, args.probe, args.json, sys.stdout
                )
            how = oneshot.How(
                args.expect,
                args.timeout_ms,
                args.protocol,
                args.baud_rate,
                args.max_bytes,
                args.json,
                sys.stdout,
            )
            if args.command == "send" and args.power_cycle:  # labgrid:// boards (issue 25)
                return oneshot.run_power_cycle(policy, args.device, args.data, args.off_ms, how)
            if args.command == "send":
                if args.data is None:
                    parser.error(messages.CLI_SEND_NEEDS_DATA)
                return oneshot.run_send(policy, args.device, args.data, how)
            return oneshot.run_read(policy, args.device, *how)
        if args.command == "view":
            from serial_mcp.view.command import run_view

            return run_view(
                args.file, args.output, *decoding, args.fields, args.gap, args.open,
                print_filter=args.print_filter, elf=args.elf,
            )  # fmt: skip
        return serve(cfg)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # ``serial-mcp decode big.jsonl | head``: the reader has all it wanted
        return _quiet_on_closed_pipe()
    except config.ConfigError as exc:
        sys.stderr.write(f"serial-mcp: {for_person(exc.message)}\n")
        return 2
    except Exception as exc:  # a startup failure is one clear line, not a traceback
        if _closed_pipe(exc):  # the same from inside a task group (``serial-mcp demo | head``)
            return _quiet_on_closed_pipe()
        logging.getLogger(__name__).debug("startup failure", exc_info=True)
        sys.stderr.write(f"serial-mcp: {for_person(str(getattr(exc, 'message', None) or exc))}\n")
        return 1


def _serial_port_placed(args: argparse.Namespace) -> bool:
    """The top-level ``--port`` is the HTTP port; a serial port given there (``serial-mcp --port
    /dev/ttyUSB0 demo``) is what ``demo --port`` means, and a clear usage error for other commands."""
    value = getattr(args, "port", None)
    if value is None or value.strip().lstrip("+-").isdigit():  # a number: its range is config's to judge
        return True
    if args.command == "demo" and args.device is None:
        args.device, args.port = value, None
        return True
    example = f"{value} ..." if args.command in ("record", "mirror", "send", "read") else f"--port {value}"
    command = args.command if args.command not in (None, "serve") else "demo"
    sys.stderr.write(
        "serial-mcp: error: "
        + messages.CLI_TOP_PORT_NOT_A_NUMBER.format(value=value, command=command, example=example)
        + "\n"
    )
    return False


def _ours_or_named(record: logging.LogRecord) -> bool:
    """Below DEBUG, the stderr log shows serial-mcp's own records and named libraries' (the MCP SDK,
    uvicorn); a library's bare ``logging.error`` (labgrid's "ERROR root: …") stays off the terminal."""
    return record.name != "root" and not record.name.startswith(("labgrid", "grpc"))


def _closed_pipe(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return all(_closed_pipe(inner) for inner in exc.exceptions)
    return isinstance(exc, BrokenPipeError)


def _quiet_on_closed_pipe() -> int:
    """Whoever read stdout closed it: end without a traceback, and point stdout at /dev/null so the
    interpreter's last flush does not fail again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    return 141  # as a shell reports a process ended by SIGPIPE


def serve(cfg: config.ServerConfig) -> int:
    """Serve over stdio until the client closes stdin, or over HTTP until interrupted."""
    import anyio

    from serial_mcp.mcp.engine_loader import freeze_heap_when_loaded
    from serial_mcp.mcp.server import build_server
    from serial_mcp.mcp.stdio_serve import run_stdio
    from serial_mcp.mcp.tool_cache import ToolCache
    from serial_mcp.serial.manager import ConnectionManager, raise_file_limit
    from serial_mcp.serial.policy import policy_opener
    from serial_mcp.store.captures import CaptureStore, Quotas
    from serial_mcp.store.profiles import ProfileStore, default_profiles_path

    raise_file_limit()  # a lab host's worth of ports needs more than the usual soft 1024 descriptors
    captures = CaptureStore(
        cfg.capture_dir,
        Quotas(cfg.capture_max_file_bytes, cfg.capture_max_total_bytes, cfg.capture_max_files),
    )
    captures.prepare()  # an unusable directory stops the start, like an unreadable profile store
    policy = config.port_policy(cfg)  # the policy every command opens ports under
    opener = policy_opener(policy)
    profiles = ProfileStore(cfg.profiles_path or default_profiles_path())
    profiles.load()  # an unreadable, corrupt or future-version store stops the start, untouched
    server = build_server(
        ConnectionManager(opener, max_ring_memory=cfg.max_ring_memory, max_connections=cfg.max_connections),
        captures=captures,
        read_only=policy.read_only,
        profiles=profiles,
        log_level=cfg.log_level,
        elf_scope=policy.elf_scope(),
        tool_cache=ToolCache(),  # the schemas of the last launch of this same code (issue 27)
        held_idle_s=cfg.held_idle_s,
    )
    freeze_heap_when_loaded()  # this process only serves: its start-up heap is never garbage
    if cfg.transport == "http":
        from serial_mcp.mcp.http import build_http_app, serve_http  # only an HTTP server loads it (issue 27)

        build_http_app(server, cfg.host, cfg.auth_token)  # refuse a bad setup before binding anything
        say_how_it_serves(cfg)
        anyio.run(serve_http, server, cfg.host, cfg.port, cfg.auth_token, cfg.log_level)
        return 0
    say_how_it_serves(cfg)
    anyio.run(run_stdio, server)  # screened stdio on the SDK's loops (mcp/stdio_serve.py)
    return 0


def say_how_it_serves(cfg: config.ServerConfig) -> None:
    """One line on stderr for a person (stdout stays the protocol's): over HTTP its URL; over stdio
    only when stdin is a terminal, i.e. a person typed ``serial-mcp`` rather than a client starting it."""
    if cfg.transport == "http":
        host = f"[{cfg.host}]" if ":" in cfg.host else cfg.host
        line = messages.CLI_SERVING_HTTP.format(version=__version__, url=f"http://{host}:{cfg.port}/mcp")
    elif sys.stdin is not None and sys.stdin.isatty():
        line = messages.CLI_SERVING_STDIO.format(version=__version__)
    else:
        return
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


if __name__ == "__main__":
    sys.exit(main())
