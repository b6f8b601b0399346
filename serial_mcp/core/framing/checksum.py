"""The declarative ``checksum`` option of delimiter, length_prefixed and start_end framing.

RX: the trailing checksum is split off the frame body and checked (``Frame.checksum_valid``).
TX: the encoder appends it. The arithmetic itself lives in :mod:`serial_mcp.core.checksums`.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Literal

from serial_mcp import messages
from serial_mcp.core import checksums
from serial_mcp.core.framing.base import crc_text
from serial_mcp.core.framing.options import Options
from serial_mcp.errors import InvalidArgument

CHECKSUM_KEYS = ("algorithm", "position", "width", "endianness", "format", "separator")
_HEX_DIGITS = frozenset(string.hexdigits.encode())


@dataclass(frozen=True, slots=True)
class ChecksumSpec:
    """Where and how a frame carries its checksum: ``payload [separator] value``."""

    algorithm: str
    width: int = 1
    endianness: Literal["big", "little"] = "big"
    format: Literal["binary", "hex"] = "binary"
    separator: bytes = b""

    @property
    def size(self) -> int:
        """Bytes the checksum trailer takes on the wire (separator included)."""
        digits = self.width if self.format == "binary" else 2 * self.width
        return len(self.separator) + digits

    def compute(self, payload: bytes) -> int:
        """The checksum of ``payload``, truncated to ``width`` bytes."""
        return checksums.compute(self.algorithm, payload) & ((1 << (8 * self.width)) - 1)

    def _value_bytes(self, payload: bytes) -> bytes:
        raw = self.compute(payload).to_bytes(self.width, self.endianness)
        return raw if self.format == "binary" else raw.hex().upper().encode("ascii")

    def split(self, body: bytes) -> tuple[bytes, bool]:
        """``(payload, valid)``; a body too short or missing its separator is invalid and kept whole."""
        size = self.size
        if len(body) < size:
            return body, False
        payload, trailer = body[: len(body) - size], body[len(body) - size :]
        if self.separator:
            if not trailer.startswith(self.separator):
                return body, False
            trailer = trailer[len(self.separator) :]
        if self.format == "hex":
            if not _HEX_DIGITS.issuperset(trailer):
                return body, False
            received = bytes.fromhex(trailer.decode("ascii"))
        else:
            received = trailer
        return payload, received == self.compute(payload).to_bytes(self.width, self.endianness)

    def detail(self, body: bytes) -> str | None:
        """A failed check's computed and received values (None when no checksum could be read)."""
        size = self.size
        if len(body) < size:
            return None
        payload, trailer = body[: len(body) - size], body[len(body) - size + len(self.separator) :]
        try:
            received = bytes.fromhex(trailer.decode("ascii")) if self.format == "hex" else trailer
        except (UnicodeDecodeError, ValueError):
            return None
        return crc_text(self.compute(payload), int.from_bytes(received, self.endianness), self.width)

    def checked(self, body: bytes) -> tuple[bytes, bool, str | None]:
        """``(payload, valid, detail)``: ``split`` plus, for a failed check, its ``detail``."""
        payload, valid = self.split(body)
        return payload, valid, None if valid else self.detail(body)

    def append(self, payload: bytes) -> bytes:
        """``payload`` followed by its separator and checksum, ready to frame."""
        return payload + self.separator + self._value_bytes(payload)


def checked(spec: ChecksumSpec | None, body: bytes) -> tuple[bytes, bool | None, str | None]:
    """``spec.checked(body)``, or ``(body, None, None)`` for a framing that declares no checksum."""
    return (body, None, None) if spec is None else spec.checked(body)


def parse_checksum(raw: object, field: str) -> ChecksumSpec:
    """Validate a ``checksum`` option object into a :class:`ChecksumSpec`."""
    opts = Options(raw, field, example='{"algorithm": "crc16_modbus", "endianness": "little"}')
    opts.check_keys(CHECKSUM_KEYS)
    algorithm = checksums.canonical_name(opts.string("algorithm", None))
    opts.choice("position", ("end",), "end")
    width = opts.integer("width", checksums.width_bytes(algorithm), 1, 16)
    little = opts.choice("endianness", ("big", "little"), "big") == "little"
    endianness: Literal["big", "little"] = "little" if little else "big"
    hex_format = opts.choice("format", ("binary", "hex"), "binary") == "hex"
    fmt: Literal["binary", "hex"] = "hex" if hex_format else "binary"
    separator = opts.raw("separator")
    if separator is None:
        separator = ""
    if not isinstance(separator, str):
        raise InvalidArgument(messages.CHECKSUM_BAD_SEPARATOR.format(field=field), field=f"{field}.separator")
    return ChecksumSpec(algorithm, width, endianness, fmt, separator.encode("utf-8"))
