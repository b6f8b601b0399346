"""The read request: a read window's options (of read, transact or capture_boot) read once into
the ``ReadRequest`` the reader runs, with the call's codecs resolved and its reply, summary and
screen checked before anything is read or sent.
"""

from __future__ import annotations

from serial_mcp import messages
from serial_mcp.core.presets import Resolved, effective
from serial_mcp.core.screen import TerminalScreen
from serial_mcp.engine.access import Caller
from serial_mcp.engine.option_types import ScreenSize
from serial_mcp.engine.options import CursorView, ReadOptions, ReadWindow
from serial_mcp.errors import InvalidArgument, Short
from serial_mcp.serial import reader
from serial_mcp.serial.connection import Connection

MAX_REPLY_TAIL = 65536


def codecs(
    conn: Connection,
    protocol: str | None = None,
    rx_framing: object = None,
    tx_framing: object = None,
    rx_parser: object = None,
) -> Resolved:
    """The effective framing/parser for this call (call field → call preset → connection → its preset)."""
    unset = protocol is None and rx_framing is None and tx_framing is None and rx_parser is None
    if unset and conn.options.plain:  # the plain case of most calls: nothing to resolve
        return _PLAIN
    call = {"protocol": protocol, "rx_framing": rx_framing, "tx_framing": tx_framing, "rx_parser": rx_parser}
    return effective(call, conn.options.codecs())


_PLAIN = effective({}, {})  # no codec at any layer (frozen; its sources are never changed)


def decode_spec(resolved: Resolved) -> reader.DecodeSpec | None:
    return reader.build_decode_spec(resolved.rx_framing, resolved.rx_parser)


def read_request(
    conn: Connection,
    caller: Caller,
    opts: ReadWindow,
    *,
    encoding: str | None = None,
    default_timeout_ms: int | None = None,
    resolved: Resolved | None = None,
) -> reader.ReadRequest:
    """The validated read of ``opts`` (the read window of read, transact or capture_boot): the one
    place its options become a ``ReadRequest``. ``read`` reads from its ``from_`` (and may ask for a
    summary); capture_boot, having no cursor, from now; transact from its mark."""
    if resolved is None:
        resolved = codecs(conn, opts.protocol, opts.rx_framing, None, opts.rx_parser)
    timeout_ms = opts.timeout_ms if opts.timeout_ms is not None else default_timeout_ms
    reply = parse_reply(opts.reply, opts.match)
    summary, to = _summary_of(opts) if isinstance(opts, ReadOptions) else (None, None)
    cursor = opts.cursor if isinstance(opts, CursorView) else None
    start = opts.from_ if isinstance(opts, ReadOptions) else None if isinstance(opts, CursorView) else "now"
    return reader.build_read_request(
        from_=start,
        cursor=caller.cursor(cursor),
        timeout_ms=timeout_ms,
        idle_ms=opts.idle_ms,
        max_bytes=opts.max_bytes,
        match=opts.match,
        encoding=encoding,
        decode=decode_spec(resolved),
        max_frames=opts.max_frames,
        until=opts.until,
        summary=summary,
        to=to,
        reply=reply,
    )


def _summary_of(opts: ReadOptions) -> tuple[tuple[str, ...] | None, int | None]:
    """``summary``/``to``/``fields`` as the read request takes them, checked: ``to`` and
    ``fields`` only with ``summary``, and a summary neither matches nor returns a screen."""
    if not opts.summary:
        for name in ("to", "fields"):
            if getattr(opts, name) is not None:
                raise InvalidArgument(messages.READ_SUMMARY_ONLY.format(name=name))
        return None, None
    for name in ("match", "screen", "reply", "respond"):
        if getattr(opts, name) is not None:
            raise InvalidArgument(messages.READ_SUMMARY_WITH.format(name=name))
    return tuple(opts.fields or ()), opts.to  # fields: typed (option_types.SummaryFields)


def parse_reply(reply: str | None, match: object) -> int | None:
    """``reply``: ``"match"`` → 0, ``"tail:N"`` → N bytes kept before the match; None → the whole read."""
    if reply is None:
        return None
    if match is None:
        raise InvalidArgument(messages.READ_REPLY_NEEDS_MATCH)
    if reply == "match":
        return 0
    head, _, count = reply.partition(":")
    if head == "tail" and count.isascii() and count.isdigit() and int(count) <= MAX_REPLY_TAIL:
        return int(count)
    raise InvalidArgument(messages.READ_BAD_REPLY.format(value=Short(reply), max=MAX_REPLY_TAIL))


def screen_for(conn: Connection, cursor: str, size: ScreenSize) -> TerminalScreen:
    """The terminal screen kept with ``cursor`` (a new size starts a new screen)."""
    return conn.rx.cursor_screen(cursor, size.get("cols", 80), size.get("rows", 24))
