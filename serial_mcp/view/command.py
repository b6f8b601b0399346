"""``serial-mcp view CAPTURE``: write a capture as one HTML page (progress and result on stderr).

The capture is read from a regular file, or from a pipe as ``cat`` reads one (a FIFO, waited on until
its writer opens it; ``<(process substitution)``), of at most ``MAX_INPUT_BYTES`` (a pipe that gives
more is refused at the byte past the cap); a device (``/dev/zero``), a directory or a socket is
refused, not read until memory runs out. The page is written only over a regular file
or a new name (a FIFO, a device node or a link to one would be replaced by the atomic rename, so it
is refused and left as it was). Those refusals print one line and exit ``EXIT_REFUSED`` (2), like
the one-shots' usage errors; an error whose exception carries no text still says what failed.
"""

from __future__ import annotations

import os
import sys
import webbrowser
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final, TextIO

from serial_mcp import messages
from serial_mcp.core.json_arg import json_option
from serial_mcp.errors import ErrorCode, InvalidArgument, SerialMcpError
from serial_mcp.serial.firmware_elf import load_local_elf
from serial_mcp.store.capture_files import (
    NotRegularFile,
    TooBig,
    file_kind,
    read_regular_file,
    write_report,
)
from serial_mcp.view.model import DEFAULT_GAP_S, ViewOptions, build_view
from serial_mcp.view.render import render_page

PROGRESS_FROM_BYTES: Final = 4 << 20  # smaller inputs are done before anyone would wait
MAX_INPUT_BYTES: Final = 256 << 20  # 4x the largest capture the server records (store.captures)
EXIT_REFUSED: Final = 2


class _Refused(Exception):
    """A path the view will not read or write; the message says why."""


def default_output(capture: str | Path) -> Path:
    """``boot.jsonl`` -> ``boot.html``, next to the capture."""
    return Path(capture).with_suffix(".html")


def _check_target(target: Path) -> None:
    """Refuse a page path that exists and is not a regular file (links followed: a link to
    ``/dev/null`` is a character device here). A missing path is fine: the page is created."""
    try:
        mode = os.stat(target).st_mode
    except OSError:
        return  # absent (or unreachable: then writing it says why)
    kind = file_kind(mode)
    if kind is not None:
        raise _Refused(messages.VIEW_NOT_REGULAR_OUTPUT.format(path=target, kind=kind))


def _read_input(file: str) -> bytes:
    try:
        return read_regular_file(file, MAX_INPUT_BYTES, pipes=True)
    except NotRegularFile as exc:
        raise _Refused(messages.VIEW_NOT_REGULAR_INPUT.format(path=file, kind=exc.kind)) from None
    except TooBig as exc:
        raise _Refused(messages.VIEW_INPUT_TOO_BIG.format(path=file, size=exc.size, max=exc.limit)) from None


def run_view(
    file: str,
    output: str | None,
    protocol: str | None,
    rx_framing: str | None,
    rx_parser: str | None,
    fields: Sequence[str] | None,
    gap_s: float = DEFAULT_GAP_S,
    open_browser: bool = False,
    err: TextIO | None = None,
    *,
    print_filter: str | None = None,
    elf: str | None = None,
) -> int:
    """Build the page for ``file`` and write it; returns the exit code (``EXIT_REFUSED`` for a path
    that is not a regular file or too big; other failures raise, with a message)."""
    stream = err if err is not None else sys.stderr

    def say(text: str) -> None:
        stream.write(text + "\n")
        stream.flush()

    try:
        options = _options(protocol, rx_framing, rx_parser, fields, gap_s, print_filter)
        return _run(file, output, options, open_browser, say, elf)
    except _Refused as exc:
        say(f"serial-mcp: {exc}")
        return EXIT_REFUSED
    except Exception as exc:
        if (getattr(exc, "message", None) or str(exc)).strip():
            raise
        kind = type(exc).__name__  # MemoryError(), for one: nothing to print but its name
        raise SerialMcpError(
            ErrorCode.INTERNAL_ERROR, messages.VIEW_FAILED_SILENT.format(path=file, kind=kind)
        ) from exc


def _options(
    protocol: str | None,
    rx_framing: str | None,
    rx_parser: str | None,
    fields: Sequence[str] | None,
    gap_s: float,
    print_filter: str | None,
) -> ViewOptions:
    if not gap_s > 0:
        raise InvalidArgument(messages.VIEW_BAD_GAP.format(value=gap_s))
    return ViewOptions(
        protocol=protocol,
        rx_framing=json_option(rx_framing, "--rx-framing"),
        rx_parser=json_option(rx_parser, "--rx-parser"),
        fields=[f for item in fields for f in item.split(",") if f] if fields else None,
        gap_s=gap_s,
        print_filter=print_filter,
    )


def _run(
    file: str,
    output: str | None,
    options: ViewOptions,
    open_browser: bool,
    say: Callable[[str], None],
    elf: str | None,
) -> int:
    target = Path(output) if output else default_output(file)
    if target.resolve() == Path(file).resolve():
        raise InvalidArgument(messages.VIEW_SAME_FILE.format(path=file))
    _check_target(target)
    raw = _read_input(file)
    progress = say if len(raw) >= PROGRESS_FROM_BYTES else (lambda _: None)
    progress(messages.VIEW_PROGRESS_READ.format(path=file, mb=len(raw) / 1e6))
    loaded = load_local_elf(elf) if elf is not None else None  # a bad one: one line, no page
    data = build_view(raw, Path(file).name, options, progress, loaded)
    missing = data["meta"].get("fields_missing")
    if missing:
        available = ", ".join(data["meta"].get("series_available") or []) or "none"
        say(messages.VIEW_FIELDS_MISSING.format(names=", ".join(missing), available=available))
    progress(messages.VIEW_PROGRESS_WRITING.format(path=target))
    _check_target(target)  # again just before the write: it may have been made a FIFO meanwhile
    written = write_report(target, render_page(data))
    say(messages.VIEW_WROTE.format(path=target, kb=round(written / 1000)))
    if open_browser:
        webbrowser.open(target.resolve().as_uri())
    return 0
