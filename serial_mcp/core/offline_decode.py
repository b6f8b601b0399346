"""Decoding a recorded session offline: each direction's chunks through the same decoders a live read
uses, merged by time. ``serial-mcp decode`` and ``serial-mcp view`` both call this (one loop, not two),
and both take ``--print-filter`` through :func:`with_print_filter` (one rule, not two)."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

from serial_mcp import messages
from serial_mcp.core.decode import DecodedFrame, StreamDecoder
from serial_mcp.core.encoding import encode_output
from serial_mcp.core.framing.base import FramingError
from serial_mcp.errors import InvalidArgument

DEFAULT_FRAMING: dict[str, Any] = {"type": "line", "ending": "auto"}
Streams = dict[str, list[tuple[float, bytes]]]


def decode_streams(
    streams: Streams,
    rx_framing: Any,
    rx_parser: Any,
    directions: Sequence[str],
    *,
    filtered: dict[str, int] | None = None,
    skipped: dict[str, int] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Frames of each direction as dicts (t, dir, offset, data, encoding, checksum_valid, parsed; or
    t, dir, offset, error), merged by time (tx first at equal times), and each direction's count of
    frames the parser's validation dropped; ``filtered`` (if given) gets each direction's count of
    frames a parser's filter hid (``esp_log``'s ``print_filter``), ``skipped`` the bytes in no frame.
    A damaged frame still waiting for bytes when the stream ends (Modbus RTU: a reply that failed its
    CRC at its shorter shape) is a bad frame, not bytes given up in silence."""
    out: list[dict[str, Any]] = []
    dropped: dict[str, int] = {}
    for direction in directions:
        decoder = StreamDecoder(rx_framing or dict(DEFAULT_FRAMING), rx_parser, 0)
        ends: list[int] = []  # stream position after each chunk
        times: list[float] = []
        events: list[DecodedFrame | FramingError] = []
        pos = 0
        for t, chunk in streams.get(direction, []):
            pos += len(chunk)
            ends.append(pos)
            times.append(t)
            events += decoder.feed(chunk)
        events += decoder.end_damaged()
        events += decoder.flush()
        for ev in events:
            if isinstance(ev, FramingError):
                t = time_at(ends, times, ev.offset)
                out.append({"t": t, "dir": direction, "offset": ev.offset, "error": ev.message})
                continue
            text, enc = encode_output(ev.data, "utf8", escape=False)  # the view reads utf8 or hex
            item: dict[str, Any] = {
                "t": time_at(ends, times, ev.end - 1),
                "dir": direction,
                "offset": ev.start,
                "data": text,
                "encoding": enc,
            }
            if ev.checksum_valid is not None:
                item["checksum_valid"] = ev.checksum_valid
            if ev.parsed is not None:
                item["parsed"] = ev.parsed
            out.append(item)
        dropped[direction] = decoder.frames_dropped
        if skipped is not None:
            skipped[direction] = decoder.bytes_skipped
        if filtered is not None:
            filtered[direction] = decoder.frames_filtered
    out.sort(key=lambda item: (item["t"], item["dir"] != "tx", item["offset"]))
    return out, dropped


def time_at(ends: list[int], times: list[float], offset: int) -> float:
    """The time of the chunk holding byte ``offset`` (the last chunk's past the end), by bisection."""
    i = bisect.bisect_right(ends, offset)
    return times[min(i, len(times) - 1)] if times else 0.0


def with_print_filter(rx_parser: Any, print_filter: str) -> dict[str, Any]:
    """``--print-filter``: the ``esp_log`` parser (the one given, or a new one) with that filter; any
    other parser is refused (the filter would be dropped in silence)."""
    if rx_parser is None:
        return {"type": "esp_log", "print_filter": print_filter}
    if isinstance(rx_parser, dict) and rx_parser.get("type") == "esp_log":
        return {**rx_parser, "print_filter": print_filter}
    kind = rx_parser.get("type") if isinstance(rx_parser, dict) else rx_parser
    raise InvalidArgument(messages.CLI_PRINT_FILTER_PARSER.format(parser=kind), field="--print-filter")
