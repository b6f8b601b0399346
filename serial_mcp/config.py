"""Server settings from four layers, first set wins: CLI flags > SERIAL_MCP_* environment > config file >
defaults.

Each option is declared once (name, type, default, help) and drives the argparse flag, the
environment variable and the config-file key, so ``serial-mcp --help`` documents them all. The same
settings govern every command: ``port_policy`` is what each of them (and the server) opens ports
under, ``server_flags`` hands them on to a server a command starts itself (``demo``).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from serial_mcp import messages
from serial_mcp.core.port_url import parse_scheme_name
from serial_mcp.errors import ErrorCode, InvalidArgument

if TYPE_CHECKING:
    from serial_mcp.serial.policy import PortPolicy


class ConfigError(InvalidArgument):
    """A setting is invalid; startup prints the message as one line and exits non-zero."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.INVALID_CONFIG, message)


def _int_at_least(low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text)
        if value < low:
            raise ValueError(f"must be at least {low}")
        return value

    return parse


def _seconds(text: str) -> float:
    value = float(text)
    if not 0 < value <= 86400:
        raise ValueError("must be more than 0 and at most 86400")
    return value


def _bool(text: str) -> bool:
    low = text.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("expected true or false")


def _list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


@dataclass(frozen=True, slots=True)
class Option:
    """One setting: config key ``name``, flag ``--name-with-dashes``, environment ``SERIAL_MCP_NAME``."""

    name: str
    parse: Callable[[str], Any]
    default: Any
    help: str
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    flag: bool = True  # False: a boolean switch (``--read-only``)
    env_name: str | None = None  # when the variable is not SERIAL_MCP_<NAME>
    cli_name: str | None = None  # when the flag is not --<name-with-dashes>
    repeat: bool = False  # the flag may be given several times (values join like a comma list)

    @property
    def env(self) -> str:
        return self.env_name or "SERIAL_MCP_" + self.name.upper()

    @property
    def cli(self) -> str:
        return "--" + (self.cli_name or self.name).replace("_", "-")


def _schemes(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(parse_scheme_name(part) for part in _list(text)))


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise ValueError("must be 0..65535")
    return value


def _host_port(text: str) -> str:
    """``HOST:PORT`` (or ``HOST``: labgrid's default port) of a labgrid coordinator."""
    host, sep, port = text.strip().rpartition(":")
    if not sep:
        host, port = text.strip(), "20408"
    if not host or any(c.isspace() or c in "/@?#" for c in host):
        raise ValueError("expected HOST:PORT")
    _port(port)
    return f"{host}:{int(port)}"


_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
# fmt: off
OPTIONS: tuple[Option, ...] = (
    Option("log_level", str.upper, "WARNING", messages.OPT_LOG_LEVEL, "LEVEL", _LEVELS),
    Option("transport", str.lower, "stdio", messages.OPT_TRANSPORT, "NAME", ("stdio", "http")),
    Option("host", str, "127.0.0.1", messages.OPT_HOST, "ADDR"),
    Option("port", _port, 8765, messages.OPT_PORT, "N"),
    Option("auth_token", str, None, messages.OPT_AUTH_TOKEN, "TOKEN", env_name="SERIAL_MCP_TOKEN"),
    Option("read_only", _bool, False, messages.OPT_READ_ONLY, flag=False),
    Option("allowlist", _list, None, messages.OPT_ALLOWLIST, "PATTERNS"),
    Option("capture_dir", Path, None, messages.OPT_CAPTURE_DIR, "DIR"),
    Option("capture_max_file_bytes", _int_at_least(1024), 64 << 20, messages.OPT_CAPTURE_MAX_FILE, "N"),
    Option("capture_max_total_bytes", _int_at_least(1024), 1 << 30, messages.OPT_CAPTURE_MAX_TOTAL, "N"),
    Option("capture_max_files", _int_at_least(1), 1000, messages.OPT_CAPTURE_MAX_FILES, "N"),
    Option("max_ring_memory", _int_at_least(1024), 1 << 30, messages.OPT_MAX_RING_MEMORY, "BYTES"),
    Option("max_connections", _int_at_least(1), 256, messages.OPT_MAX_CONNECTIONS, "N"),
    Option("profiles_path", Path, None, messages.OPT_PROFILES_PATH, "FILE", env_name="SERIAL_MCP_PROFILES"),
    Option("enable_url_schemes", _schemes, (), messages.OPT_ENABLE_URL_SCHEMES, "SCHEME",
           cli_name="enable_url_scheme", repeat=True),
    Option("firmware_dirs", _list, (), messages.OPT_FIRMWARE_DIR, "DIR", cli_name="firmware_dir",
           env_name="SERIAL_MCP_FIRMWARE_DIR", repeat=True),  # issue 24: where open(elf=...) may read
    Option("labgrid_coordinator", _host_port, None, messages.OPT_LABGRID_COORDINATOR, "HOST:PORT",
           env_name="LG_COORDINATOR"),  # labgrid's own variable (issue 25)
    Option("mirror_any_user", _bool, False, messages.OPT_MIRROR_ANY_USER, flag=False),  # issue 36.1
    Option("held_idle_s", _seconds, 60.0, messages.OPT_HELD_IDLE_S, "S"),  # issue 39: engine/held.py
)
# fmt: on
OPTION_BY_NAME = {o.name: o for o in OPTIONS}


@dataclass(frozen=True)
class ServerConfig:
    """The effective settings, and which layer each came from (for ``--help`` and diagnostics)."""

    values: dict[str, Any]
    sources: dict[str, str] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        try:
            return self.values[name]
        except KeyError:
            raise AttributeError(name) from None


def add_options(parser: argparse.ArgumentParser) -> None:
    """Register every option as a flag whose default is None (so "not given" is visible)."""
    parser.add_argument("--config", metavar="FILE", default=None, help=messages.OPT_CONFIG)
    for o in OPTIONS:
        text = f"{o.help} [env {o.env}; default {o.default}]"
        if not o.flag:
            parser.add_argument(o.cli, dest=o.name, action="store_const", const=True, default=None, help=text)
        elif o.repeat:
            parser.add_argument(
                o.cli, dest=o.name, action="append", default=None, metavar=o.metavar, help=text
            )
        else:
            parser.add_argument(o.cli, dest=o.name, default=None, metavar=o.metavar, help=text)


def _convert(o: Option, raw: Any, where: str) -> Any:
    if raw is None:
        return None
    text = ",".join(map(str, raw)) if isinstance(raw, list) else str(raw)  # TOML values arrive typed
    try:
        value = o.parse(text)
    except (ValueError, TypeError) as exc:
        raise ConfigError(messages.CONFIG_BAD_VALUE.format(where=where, value=raw, error=exc)) from None
    if o.choices and value not in o.choices:
        raise ConfigError(
            messages.CONFIG_BAD_CHOICE.format(where=where, value=raw, allowed=", ".join(o.choices))
        )
    return value


def load_config_file(path: str) -> dict[str, Any]:
    import tomllib  # only with a config file (issue 27: start-up)

    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as exc:
        raise ConfigError(messages.CONFIG_UNREADABLE.format(path=path, error=exc.strerror or exc)) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(messages.CONFIG_NOT_TOML.format(path=path, error=exc)) from None
    unknown = sorted(k for k in data if k.replace("-", "_") not in OPTION_BY_NAME)
    if unknown:
        raise ConfigError(messages.CONFIG_UNKNOWN_KEY.format(path=path, key=unknown[0]))
    return {k.replace("-", "_"): v for k, v in data.items()}


def resolve(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> ServerConfig:
    """Merge the layers: flags > environment > config file > defaults."""
    env = os.environ if environ is None else environ
    config_path = getattr(args, "config", None) or env.get("SERIAL_MCP_CONFIG")
    file_values = load_config_file(config_path) if config_path else {}
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for o in OPTIONS:
        flag_value = getattr(args, o.name, None)
        if flag_value is not None:
            values[o.name], sources[o.name] = _convert(o, flag_value, o.cli), "flag"
        elif o.env in env:
            values[o.name], sources[o.name] = _convert(o, env[o.env], o.env), "env"
        elif o.name in file_values:
            raw = file_values[o.name]
            values[o.name], sources[o.name] = _convert(o, raw, f"{config_path}: {o.name}"), "file"
        else:
            values[o.name], sources[o.name] = o.default, "default"
    return ServerConfig(values, sources)


def port_policy(cfg: ServerConfig) -> PortPolicy:
    """The port policy of these settings, checked (a bad allowlist is a startup error: fail
    closed, never "allow all")."""
    from serial_mcp.serial.peer_process import allow_any_user
    from serial_mcp.serial.policy import PortPolicy  # here: ``serial-mcp --help`` loads no engine

    try:
        policy = PortPolicy.of(
            read_only=cfg.read_only,
            allowlist=cfg.allowlist,
            enable_url_schemes=cfg.enable_url_schemes,
            capture_dir=cfg.capture_dir,
            firmware_dirs=cfg.firmware_dirs,
            labgrid_coordinator=cfg.labgrid_coordinator,
        )
        policy.patterns()
    except InvalidArgument as exc:
        raise ConfigError(exc.message) from None
    allow_any_user(cfg.mirror_any_user)  # the mirrors' rule for a peer whose uid cannot be found
    return policy


# a server a command starts for itself speaks stdio to it: where and how others reach it is not handed on
_NOT_HANDED_ON = frozenset({"transport", "host", "port", "auth_token"})


def server_flags(cfg: ServerConfig) -> list[str]:
    """Flags that give a ``serial-mcp`` subprocess these settings (every one not at its default),
    whichever layer they came from: its environment and config file may not be this one's."""
    flags: list[str] = []
    for o in OPTIONS:
        value = cfg.values.get(o.name)
        if o.name in _NOT_HANDED_ON or cfg.sources.get(o.name, "default") == "default" or value is None:
            continue
        if not o.flag:
            flags += [o.cli] if value else []
        elif o.repeat:
            for item in value:
                flags += [o.cli, str(item)]
        elif isinstance(value, (list, tuple)):
            flags += [o.cli, ",".join(map(str, value))]
        else:
            flags += [o.cli, str(value)]
    return flags
