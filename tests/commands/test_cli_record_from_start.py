"""Issue 37.3: ``serial-mcp record`` holds the port's bytes from the first one (a banner the device
sends at open is in the file), and the header says the capture starts at offset 0."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from serial_mcp.core.capture import CaptureEvent, CaptureHeader, capture_text
from serial_mcp.store.capture_files import read_capture
from tests.pty.devices import interrupt_once_file_holds

pytestmark = pytest.mark.slow

BANNER = b"".join(b"ESP-ROM:esp32s3-20210327 line %03d\r\n" % i for i in range(60))


def test_cli_record_holds_the_banner_sent_at_open(tmp_path: Path) -> None:
    events = [CaptureEvent(0.0, "rx", BANNER[i : i + 64], i) for i in range(0, len(BANNER), 64)]
    header = CaptureHeader(created="2026-12-01T00:00:00.000000Z")
    (tmp_path / "banner.jsonl").write_text(capture_text(header, events))
    out = tmp_path / "bench.jsonl"
    port = f"replay://{tmp_path / 'banner.jsonl'}?mode=instant"
    proc = subprocess.Popen(
        [sys.executable, "-m", "serial_mcp", "record", port, "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    try:
        interrupt_once_file_holds(proc, out, b"line 059", "the recording never held the banner's last line")
    finally:
        if proc.poll() is None:
            proc.kill()
    cap = read_capture(out)
    assert cap.payload("rx") == BANNER
    assert cap.header.start_offset == 0
