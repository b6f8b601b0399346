"""AT command responses (V.250 / 3GPP 27.007 style modems and modules).

Kinds: ``echo`` (our own command echoed back), ``response`` (``+CMD: a,b``, also ``^``,
``%``, ``$``, ``#`` and ``*`` vendor prefixes, solicited or not), ``final`` (OK, ERROR,
+CME/+CMS ERROR, BUSY, NO ANSWER, NO DIALTONE, CONNECT: ends the exchange), ``urc``
(RING, NO CARRIER, module ready notices, and a ``+CMD:`` line whose prefix is not one of the
command's — ``+CREG: 1`` arriving inside an ``AT+CSQ`` reply) and ``text`` (everything else, e.g.
ATI lines). The parser remembers the last echoed command to tell replies from URCs; without an
echo (``ATE0``) every ``+CMD:`` line is a ``response``.
"""

from __future__ import annotations

import csv
import re
from typing import Any, Final

from serial_mcp.core.parsers.base import Parsed, text_of

_ERROR_RE: Final = re.compile(r"^\+(CME|CMS) ERROR\s*:\s*(.*)$", re.IGNORECASE)
_RESPONSE_RE: Final = re.compile(r"^([+^%$#*][A-Za-z0-9_]+)\s*:\s?(.*)$", re.DOTALL)
_CONNECT_RE: Final = re.compile(r"^CONNECT(?:\s+(.*))?$", re.IGNORECASE | re.DOTALL)
_FINALS: Final = frozenset({"OK", "ERROR", "BUSY", "NO ANSWER", "NO DIALTONE"})
_URCS: Final = frozenset(
    {
        "RING",
        "NO CARRIER",
        "RDY",
        "READY",
        "CALL READY",
        "SMS READY",
        "WIFI CONNECTED",
        "WIFI GOT IP",
        "WIFI DISCONNECT",
        "POWERED DOWN",
        "NORMAL POWER DOWN",
    }
)


def split_values(text: str) -> list[str]:
    """``0,1,"a,b"`` -> ``['0', '1', 'a,b']``: commas outside double quotes, quotes removed."""
    if not text.strip():
        return []
    try:
        row = next(csv.reader([text], skipinitialspace=True), [])
    except csv.Error:  # NUL or a stray newline: fall back to a plain split
        row = text.split(",")
    return [value.strip() for value in row]


_COMMAND_PREFIX: Final = re.compile(r"[+^%$#*][A-Za-z0-9_]+")


def command_prefixes(echo: str) -> frozenset[str]:
    """``AT+CSQ;+CREG?`` -> ``{"+CSQ", "+CREG"}``: the response prefixes a command line asks for."""
    return frozenset(m.group(0).upper() for m in _COMMAND_PREFIX.finditer(echo[2:]))


class AtCommandParser:
    """Classifies one AT line; ``final`` frames end a command/response exchange."""

    __slots__ = ("_expected", "validate")

    def __init__(self, validate: bool = False) -> None:
        self.validate = validate
        self._expected: frozenset[str] | None = None  # prefixes the last echoed command asks for

    def parse(self, payload: bytes) -> Parsed:
        """See the module docstring for the kinds and their fields."""
        text = text_of(payload).strip()
        upper = text.upper()
        m = _ERROR_RE.match(text)
        if m:
            detail = m.group(2).strip()
            status = f"+{m.group(1).upper()} ERROR"
            fields: dict[str, Any] = {"kind": "final", "status": status, "success": False}
            if detail.isascii() and detail.isdigit():
                fields["error_code"] = int(detail)
            else:
                fields["error_text"] = detail
            return Parsed(fields, final=True)
        if upper in _FINALS:
            return Parsed({"kind": "final", "status": upper, "success": upper == "OK"}, final=True)
        m = _CONNECT_RE.match(text)
        if m:
            fields = {"kind": "final", "status": "CONNECT", "success": True}
            if m.group(1):
                fields["detail"] = m.group(1).strip()
            return Parsed(fields, final=True)
        if upper in _URCS:
            return Parsed({"kind": "urc", "text": text})
        if upper.startswith("AT"):
            self._expected = command_prefixes(text)
            return Parsed({"kind": "echo", "command": text})
        m = _RESPONSE_RE.match(text)
        if m:
            prefix = m.group(1)
            solicited = self._expected is None or prefix.upper() in self._expected
            kind = "response" if solicited else "urc"
            return Parsed({"kind": kind, "command": prefix, "values": split_values(m.group(2))})
        return Parsed({"kind": "text", "text": text})
