"""Payload parsers: one frame's bytes in, a JSON-serialisable interpretation out (sans-IO).

``build_parser(rx_parser)`` gives a :class:`Parser`; TX helpers ``nmea_encode`` and
``modbus_ascii_encode`` add the checksums those protocols need.
"""

from serial_mcp.core.parsers.at_command import AtCommandParser
from serial_mcp.core.parsers.base import Parsed, Parser
from serial_mcp.core.parsers.config import PARSER_TYPES, build_parser
from serial_mcp.core.parsers.esp_log import EspLogParser
from serial_mcp.core.parsers.esp_log_filter import PrintFilter
from serial_mcp.core.parsers.grbl import GrblParser
from serial_mcp.core.parsers.json_lines import JsonLinesParser
from serial_mcp.core.parsers.modbus_ascii import ModbusAsciiEncoder, ModbusAsciiParser, modbus_ascii_encode
from serial_mcp.core.parsers.nmea import NmeaEncoder, NmeaParser, nmea_encode
from serial_mcp.core.parsers.raw import RawParser
from serial_mcp.core.parsers.shell_prompt import ShellPromptParser

__all__ = [
    "PARSER_TYPES",
    "AtCommandParser",
    "EspLogParser",
    "GrblParser",
    "JsonLinesParser",
    "ModbusAsciiEncoder",
    "ModbusAsciiParser",
    "NmeaEncoder",
    "NmeaParser",
    "Parsed",
    "Parser",
    "PrintFilter",
    "RawParser",
    "ShellPromptParser",
    "build_parser",
    "modbus_ascii_encode",
    "nmea_encode",
]
