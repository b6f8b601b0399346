"""Read the JSON-shaped ``{"type": "binary", ...}`` object into a :class:`BinaryLayout`.

Keys (all validated, unknown ones refused with the closest name)::

    sync           hex string or list of hex strings ("AA55", ["B562"]); required
    length         {offset, size 1|2|4, endianness, counts payload|frame|from, from, adjust, mask}
                   or a whole number (every frame has that many bytes)
    header_length  bytes before the payload (default: just past the length field)
    checksum       {algorithm, width, endianness, start, stop, position} - over frame[start:stop]
                   (stop default: up to the checksum), stored at the end or at offset ``position``
    max_length     longest frame in bytes (longer declared lengths are impossible: resync)
"""

from __future__ import annotations

import string
from typing import Final, Literal

from serial_mcp import messages
from serial_mcp.core import checksums
from serial_mcp.core.framing.binary import BinaryLayout, Counts, FrameChecksum, LengthField
from serial_mcp.core.framing.options import Options
from serial_mcp.errors import InvalidArgument

BINARY_KEYS: Final = ("sync", "length", "header_length", "checksum", "max_length")
_LENGTH_KEYS: Final = ("offset", "size", "endianness", "counts", "from", "adjust", "mask")
_CHECKSUM_KEYS: Final = ("algorithm", "width", "endianness", "start", "stop", "position")
_HEX: Final = frozenset(string.hexdigits)
_LIMIT: Final = 1 << 26
DEFAULT_MAX_BINARY: Final = 65536 + 64


def _hex(value: object, field: str) -> bytes:
    text = value.replace(" ", "") if isinstance(value, str) else ""
    if text.lower().startswith("0x"):
        text = text[2:]
    if not text or len(text) % 2 or not _HEX.issuperset(text):
        raise InvalidArgument(messages.BINARY_BAD_HEX.format(field=field, value=repr(value)), field=field)
    return bytes.fromhex(text)


def _syncs(opts: Options) -> list[bytes]:
    raw = opts.raw("sync")
    field = f"{opts.field}.sync"
    if raw is None:
        opts.string("sync", None)  # the standard "is required" message
    items = raw if isinstance(raw, list) and raw else [raw]
    return [_hex(item, field) for item in items]


def _order(opts: Options) -> Literal["big", "little"]:
    return "little" if opts.choice("endianness", ("big", "little"), "big") == "little" else "big"


def _length(opts: Options, sync_len: int) -> LengthField | int:
    raw = opts.raw("length")
    field = f"{opts.field}.length"
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return opts.integer("length", None, sync_len + 1, _LIMIT)
    sub = Options(raw, field, example='{"offset": 2, "size": 1}')
    sub.check_keys(_LENGTH_KEYS)
    offset = sub.integer("offset", None, 0, 4096)
    if offset < sync_len:
        problem = messages.BINARY_LENGTH_OVERLAPS_SYNC.format(offset=offset, sync=sync_len)
        raise InvalidArgument(messages.BINARY_LAYOUT.format(field=opts.field, problem=problem), field=field)
    start = sub.raw("from")
    counts_default = "from" if start is not None else "payload"
    counts: Counts = "payload"
    chosen = sub.choice("counts", ("payload", "frame", "from"), counts_default)
    if chosen == "frame":
        counts = "frame"
    elif chosen == "from":
        counts = "from"
        if start is None:
            problem = messages.BINARY_FROM_NEEDS_START
            raise InvalidArgument(
                messages.BINARY_LAYOUT.format(field=opts.field, problem=problem), field=field
            )
    size = sub.choice_int("size", (1, 2, 4), 1)
    mask = sub.raw("mask")
    return LengthField(
        offset=offset,
        size=size,
        endianness=_order(sub),
        counts=counts,
        start=sub.integer("from", 0, 0, 4096),
        adjust=sub.integer("adjust", 0, -4096, 4096),
        mask=None if mask is None else sub.integer("mask", None, 1, (1 << (8 * size)) - 1),
    )


def _checksum(opts: Options) -> FrameChecksum | None:
    raw = opts.raw("checksum")
    if raw is None:
        return None
    field = f"{opts.field}.checksum"
    sub = Options(raw, field, example='{"algorithm": "crc16_modbus", "endianness": "little"}')
    sub.check_keys(_CHECKSUM_KEYS)
    algorithm = checksums.canonical_name(sub.string("algorithm", None))
    width = sub.integer("width", checksums.width_bytes(algorithm), 1, 16)
    position: int | None = None
    if sub.raw("position") not in (None, "end"):
        position = sub.integer("position", None, 0, 4096)
    stop_raw = sub.raw("stop")
    stop = None if stop_raw is None else sub.integer("stop", None, -4096, 4096)
    result = FrameChecksum(algorithm, width, _order(sub), sub.integer("start", 0, 0, 4096), stop, position)
    if position is not None:  # a checksum inside the frame must not cover itself
        at, start, end = result.bounds(1 << 20)
        if start < at + width and at < end:
            problem = messages.BINARY_CHECKSUM_COVERS_ITSELF.format(start=start, stop=stop, at=at)
            raise InvalidArgument(
                messages.BINARY_LAYOUT.format(field=opts.field, problem=problem), field=field
            )
    return result


def parse_binary(
    opts: Options, *, include_terminators: bool = False, skip_empty: bool = False
) -> BinaryLayout:
    """The layout of a ``binary`` rx_framing / tx_framing object (its keys already checked)."""
    syncs = _syncs(opts)
    length = _length(opts, max(len(s) for s in syncs))
    header = opts.raw("header_length")
    layout = BinaryLayout(
        syncs,
        length,
        header_length=None if header is None else opts.integer("header_length", None, 0, 4096),
        checksum=_checksum(opts),
        max_length=opts.integer("max_length", DEFAULT_MAX_BINARY, 1, _LIMIT),
        include_terminators=include_terminators,
        skip_empty=skip_empty,
    )
    if layout.max_length < layout.min_length or (
        layout.fixed_length is not None and layout.fixed_length < layout.min_length
    ):
        problem = messages.BINARY_MAX_BELOW_MIN.format(
            max_length=layout.fixed_length or layout.max_length, least=layout.min_length
        )
        raise InvalidArgument(
            messages.BINARY_LAYOUT.format(field=opts.field, problem=problem), field=opts.field
        )
    return layout
