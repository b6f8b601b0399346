"""``serial-mcp decode``: a capture (or a raw byte file) through the server's own decoders, offline.

What an agent exported, or a person recorded, decodes here into the same frames ``read`` would
return: ``core/presets`` resolves the settings, ``core/decode.StreamDecoder`` frames and parses.
Frames go to stdout (text or JSON lines), the count to stderr. ``--events`` lists the boots, resets and
crashes instead, and ``--elf`` decodes their backtraces with the live connection's own ELF loader
(``serial/firmware_elf.py``).
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from serial_mcp import messages
from serial_mcp.commands.output import status
from serial_mcp.core import frame_values, offline_decode
from serial_mcp.core.capture import decode_lines, parse_capture
from serial_mcp.core.events import Event, EventDetector
from serial_mcp.core.json_arg import json_option
from serial_mcp.core.offline_decode import with_print_filter
from serial_mcp.core.presets import effective
from serial_mcp.errors import ErrorCode, InvalidArgument, NotFound
from serial_mcp.serial.event_text import event_dict, where_suffix
from serial_mcp.serial.firmware_elf import LoadedElf, load_local_elf
from serial_mcp.store.capture_files import NotRegularFile, TooBig, read_regular_file

# The most a decode reads: the view's cap (4x the largest capture the server records).
MAX_INPUT_BYTES = 256 << 20


def load_streams(raw: bytes) -> dict[str, list[tuple[float, bytes]]]:
    """A capture's rx and tx chunks with their times, or a raw byte file as one rx chunk at t=0."""
    try:
        lines = decode_lines(raw)
        capture = parse_capture(lines, torn_tail_ok=True)
    except Exception:  # not a capture file: decode the bytes as they are
        return {"rx": [(0.0, raw)], "tx": []}
    streams: dict[str, list[tuple[float, bytes]]] = {"rx": [], "tx": []}
    for e in capture.events:
        if e.type in streams and e.data:
            streams[e.type].append((e.t, e.data))
    return streams


def decode_streams(
    streams: dict[str, list[tuple[float, bytes]]],
    rx_framing: Any,
    rx_parser: Any,
    directions: tuple[str, ...],
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Frames of each direction through the same decoders the server uses, merged by time."""
    return offline_decode.decode_streams(streams, rx_framing, rx_parser, directions)


def detect_events(chunks: list[tuple[float, bytes]]) -> list[Event]:
    """The boots, resets, crashes and boot loops in received chunks, as a live connection finds them
    (offsets count from the first received byte)."""
    detector = EventDetector()
    found: list[Event] = []
    offset = 0
    for t, data in chunks:
        found += detector.feed(data, offset, t)
        offset += len(data)
    return found + detector.flush()


def run_events(chunks: list[tuple[float, bytes]], fmt: str, out: TextIO, elf: LoadedElf | None = None) -> int:
    """``decode --events``: one line per event (or its JSON), the count to stderr. With ``elf`` (``--elf``)
    each event's addresses are decoded as a live connection decodes them: the text line ends in
    `` — function at file:line``, the JSON has ``frames``."""
    found = detect_events(chunks)
    for event in found:
        frames = elf.decode_event(event) if elf is not None else ()
        if fmt == "jsonl":
            out.write(json.dumps(event_dict(event, frames), ensure_ascii=False) + "\n")
        else:
            out.write(f"{event.t:12.6f} {event.severity:<8} {event.summary()}{where_suffix(frames)}\n")
    crashes = sum(1 for e in found if e.kind == "crash")
    status(messages.CLI_DECODED_EVENTS.format(n=len(found), crashes=crashes))
    return 0


def counts_line(frames: list[dict[str, Any]], dropped: int, skipped: int) -> str:
    """The decode's totals, every frame counted once: ``N frame(s): V valid, B bad (…)``, where bad
    are those validation dropped, those shown marked bad and framing errors."""
    errors = sum(1 for f in frames if "error" in f)
    marked = sum(1 for f in frames if f.get("checksum_valid") is False)
    total = len(frames) + dropped
    bad = dropped + marked + errors
    text = messages.CLI_DECODED_COUNTS.format(
        total=total, valid=total - bad, bad=bad, dropped=dropped, marked=marked, errors=errors
    )
    return text + (messages.CLI_DECODED_SKIPPED.format(n=skipped) if skipped else "")


def frame_text(frame: dict[str, Any]) -> str:
    """A frame as a framed read's text shows it: kind, checksum verdict and the decoded values
    (``nmea GPGGA ok: fix=gps sv=14 lat=47.661982 …``); a frame with none, its data (and parsed fields)."""
    parsed = frame.get("parsed")
    values = frame_values.render(frame_values.values_of(parsed))
    if values:
        verdict = {True: " ok", False: " BAD", None: ""}[frame.get("checksum_valid")]
        return f"{frame_values.label_of(parsed)}{verdict}: {values}"
    data = frame["data"]
    shown = json.dumps(data, ensure_ascii=False) if frame["encoding"] == "utf8" else f"hex:{data}"
    return shown + (" " + json.dumps(parsed, ensure_ascii=False) if parsed is not None else "")


def _read_input(file: str) -> bytes:
    """A regular file of at most MAX_INPUT_BYTES: a device (``/dev/zero``), a FIFO or a socket is
    refused, not read until memory runs out."""
    try:
        return read_regular_file(file, MAX_INPUT_BYTES)
    except NotRegularFile as exc:
        raise NotFound(
            ErrorCode.FILE_UNREADABLE, messages.DECODE_NOT_REGULAR_INPUT.format(path=file, kind=exc.kind)
        ) from None
    except TooBig as exc:
        raise NotFound(
            ErrorCode.FILE_UNREADABLE,
            messages.DECODE_INPUT_TOO_BIG.format(path=file, size=exc.size, max=exc.limit),
        ) from None


def run_decode(
    file: str,
    protocol: str | None,
    rx_framing: str | None,
    rx_parser: str | None,
    fmt: str,
    direction: str,
    out: TextIO,
    *,
    events: bool = False,
    print_filter: str | None = None,
    elf: str | None = None,
) -> int:
    if events and print_filter is not None:  # never dropped in silence
        raise InvalidArgument(messages.CLI_EVENTS_NO_FILTER)
    if elf is not None and not events:
        raise InvalidArgument(messages.CLI_ELF_NEEDS_EVENTS, field="--elf")
    raw = _read_input(file)
    if events:
        loaded = load_local_elf(elf) if elf is not None else None  # before anything is written
        return run_events(load_streams(raw)["rx"], fmt, out, loaded)
    resolved = effective(
        {
            "protocol": protocol,
            "rx_framing": json_option(rx_framing, "--rx-framing"),
            "rx_parser": json_option(rx_parser, "--rx-parser"),
        },
        {},
    )
    parser = resolved.rx_parser
    if print_filter is not None:
        parser = with_print_filter(parser, print_filter)
    directions = ("rx", "tx") if direction == "both" else (direction,)
    filtered: dict[str, int] = {}
    skipped: dict[str, int] = {}
    frames, dropped = offline_decode.decode_streams(
        load_streams(raw), resolved.rx_framing, parser, directions, filtered=filtered, skipped=skipped
    )
    for f in frames:
        if fmt == "jsonl":
            out.write(json.dumps(f, ensure_ascii=False) + "\n")
        elif "error" in f:
            out.write(f"{f['t']:12.6f} {f['dir']} @{f['offset']:<8} ERROR {f['error']}\n")
        else:
            out.write(f"{f['t']:12.6f} {f['dir']} @{f['offset']:<8} {frame_text(f)}\n")
    status(counts_line(frames, sum(dropped.values()), sum(skipped.values())))
    if print_filter is not None:
        status(messages.CLI_FILTERED.format(n=sum(filtered.values()), filter=print_filter))
    return 0
