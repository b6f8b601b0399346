"""Build a payload parser from the JSON-shaped ``rx_parser`` object, validating every key."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from serial_mcp import messages
from serial_mcp.core.framing.options import Options
from serial_mcp.core.parsers.at_command import AtCommandParser
from serial_mcp.core.parsers.base import Parser
from serial_mcp.core.parsers.esp_log import EspLogParser
from serial_mcp.core.parsers.esp_log_filter import PrintFilter
from serial_mcp.core.parsers.grbl import GrblParser
from serial_mcp.core.parsers.json_lines import JsonLinesParser
from serial_mcp.core.parsers.modbus_ascii import ModbusAsciiParser
from serial_mcp.core.parsers.modbus_rtu import ModbusRtuParser
from serial_mcp.core.parsers.nmea import NmeaParser
from serial_mcp.core.parsers.raw import RawParser
from serial_mcp.core.parsers.shell_prompt import ShellPromptParser
from serial_mcp.errors import InvalidArgument

_TYPES = ("at_command", "json_lines", "shell_prompt", "nmea", "modbus_ascii", "grbl", "raw", "modbus_rtu")
_EXTRA_KEYS = {"shell_prompt": ("prompt",), "esp_log": ("print_filter",)}
_KEYS: Final = {
    kind: ("type", "validate", *_EXTRA_KEYS.get(kind, ()))
    for kind in (*_TYPES, "ubx", "rtcm3", "gnss", "esp_log")
}
PARSER_TYPES: Final = tuple(_KEYS)


def _shell(opts: Options, validate: bool) -> Parser:
    prompt = opts.raw("prompt")
    if prompt is None:
        return ShellPromptParser(None, validate)
    pattern = opts.string("prompt", None)
    try:
        return ShellPromptParser(pattern, validate)
    except re.error as exc:
        raise InvalidArgument(
            messages.PARSER_BAD_PROMPT.format(field=opts.field, error=exc), field=f"{opts.field}.prompt"
        ) from None


def _esp_log(opts: Options, validate: bool) -> Parser:
    spec = opts.raw("print_filter")
    if spec is None or spec == "":  # esp-idf-monitor's empty filter shows everything
        return EspLogParser(validate)
    return EspLogParser(
        validate, PrintFilter(opts.string("print_filter", None), field=f"{opts.field}.print_filter")
    )


# The GNSS parsers (pyubx2, pyrtcm, pynmeagps) are imported by the first read that asks for one,
# not at start-up (issue 27).
def _ubx(opts: Options, validate: bool) -> Parser:
    from serial_mcp.core.parsers.gnss import UbxParser

    return UbxParser(validate)


def _rtcm3(opts: Options, validate: bool) -> Parser:
    from serial_mcp.core.parsers.gnss import Rtcm3Parser

    return Rtcm3Parser(validate)


def _gnss(opts: Options, validate: bool) -> Parser:
    from serial_mcp.core.parsers.gnss import GnssParser

    return GnssParser(validate)


_BUILDERS: Final[dict[str, Callable[[Options, bool], Parser]]] = {
    "at_command": lambda o, v: AtCommandParser(v),
    "json_lines": lambda o, v: JsonLinesParser(v),
    "shell_prompt": _shell,
    "nmea": lambda o, v: NmeaParser(v),
    "modbus_ascii": lambda o, v: ModbusAsciiParser(v),
    "grbl": lambda o, v: GrblParser(v),
    "raw": lambda o, v: RawParser(v),
    "modbus_rtu": lambda o, v: ModbusRtuParser(v),
    "ubx": _ubx,
    "rtcm3": _rtcm3,
    "gnss": _gnss,
    "esp_log": _esp_log,
}


def build_parser(rx_parser: object, *, field: str = "rx_parser") -> Parser:
    """The parser for ``rx_parser``; its ``validate`` (default false) drops bad-checksum frames."""
    opts = Options(rx_parser, field, example='{"type": "nmea", "validate": true}')
    if "type" not in opts:  # report a misspelt 'type' key before asking for it
        opts.check_keys(sorted({key for allowed in _KEYS.values() for key in allowed}))
    kind = opts.choice("type", PARSER_TYPES)
    opts.check_keys(_KEYS[kind], context=messages.OPTIONS_FOR_TYPE.format(type=kind))
    return _BUILDERS[kind](opts, opts.boolean("validate", False))
