"""``serial-mcp view CAPTURE``: write a capture as one HTML page (progress and result on stderr)."""

from __future__ import annotations

import sys
import webbrowser
from collections.abc import Sequence
from pathlib import Path
from typing import Final, TextIO

from serial_mcp import messages
from serial_mcp.core.json_arg import json_option
from serial_mcp.errors import InvalidArgument
from serial_mcp.store.capture_files import read_capture_bytes, write_report
from serial_mcp.view.model import DEFAULT_GAP_S, ViewOptions, build_view
from serial_mcp.view.render import render_page

__all__ = ["default_output", "run_view"]

PROGRESS_FROM_BYTES: Final = 4 << 20  # smaller inputs are done before anyone would wait


def default_output(capture: str | Path) -> Path:
    """``boot.jsonl`` -> ``boot.html``, next to the capture."""
    return Path(capture).with_suffix(".html")


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
) -> int:
    """Build the page for ``file`` and write it; returns the exit code."""
    stream = err if err is not None else sys.stderr

    def say(text: str) -> None:
        stream.write(text + "\n")
        stream.flush()

    if not gap_s > 0:
        raise InvalidArgument(messages.VIEW_BAD_GAP.format(value=gap_s))
    target = Path(output) if output else default_output(file)
    if target.resolve() == Path(file).resolve():
        raise InvalidArgument(messages.VIEW_SAME_FILE.format(path=file))
    options = ViewOptions(
        protocol=protocol,
        rx_framing=json_option(rx_framing, "--rx-framing"),
        rx_parser=json_option(rx_parser, "--rx-parser"),
        fields=[f for item in fields for f in item.split(",") if f] if fields else None,
        gap_s=gap_s,
    )
    raw = read_capture_bytes(file)
    progress = say if len(raw) >= PROGRESS_FROM_BYTES else (lambda _: None)
    progress(messages.VIEW_PROGRESS_READ.format(path=file, mb=len(raw) / 1e6))
    data = build_view(raw, Path(file).name, options, progress)
    missing = data["meta"].get("fields_missing")
    if missing:
        available = ", ".join(data["meta"].get("series_available") or []) or "none"
        say(messages.VIEW_FIELDS_MISSING.format(names=", ".join(missing), available=available))
    progress(messages.VIEW_PROGRESS_WRITING.format(path=target))
    written = write_report(target, render_page(data))
    say(messages.VIEW_WROTE.format(path=target, kb=round(written / 1000)))
    if open_browser:
        webbrowser.open(target.resolve().as_uri())
    return 0
