"""The real esptool CLI (from PyPI, ``--no-stub``) against sim://esp32-rom on a PTY: read-mac, write-flash
(compressed and plain) and verify-flash, then a reset through the board's DTR/RTS and its boot log naming
the new image. A PTY carries no DTR/RTS, so the board powers on in download mode (``?boot=download``) and
esptool runs with ``--before no-reset --after no-reset``."""

from __future__ import annotations

import hashlib
import os
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import serial

from serial_mcp.api import serve_pty
from serial_mcp.serial.pty_bridge import PtyBridge
from serial_mcp.serial.sim.esp32_rom import Esp32PortHandle

pytest.importorskip("esptool")
from esptool.bin_image import ELFSection, ESP32FirmwareImage  # type: ignore[import-untyped]

pytestmark = pytest.mark.pty


@pytest.fixture
def board() -> Iterator[tuple[PtyBridge, Esp32PortHandle]]:
    with serve_pty("sim://esp32-rom?boot=download") as bridge:
        assert isinstance(bridge.handle, Esp32PortHandle)
        with serial.Serial(
            bridge.path, 115200, timeout=10
        ) as port:  # the ROM's banner, read as a person would
            assert port.read_until(b"waiting for download\r\n").endswith(
                b"DOWNLOAD_BOOT(UART0/UART1/SDIO_REI_REO_V2))\r\nwaiting for download\r\n"
            )
        yield bridge, bridge.handle


def esptool(path: str, *args: str) -> str:
    cmd = [sys.executable, "-m", "esptool", "--chip", "esp32", "--no-stub", "--port", path,
           "--before", "no-reset", "--after", "no-reset", *args]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def app_image(project: bytes, size: int) -> bytes:
    img = ESP32FirmwareImage()
    img.entrypoint = 0x40080010
    code = os.urandom(size)
    desc = struct.pack(
        "<II8x32s32s16s16s32s32s",
        0xABCD5432,
        0,
        b"1.2.3",
        project,
        b"09:30:00",
        b"Apr  1 2025",
        b"v5.4",
        hashlib.sha256(code).digest(),
    )
    img.segments.append(ELFSection(b".flash.appdesc", 0x3F400020, desc.ljust(256, b"\0"), 0))
    img.segments.append(ELFSection(b".iram0.text", 0x40080000, code, 0))
    data: bytes = img.save(None)
    return data


def test_esptool_read_mac(board: tuple[PtyBridge, Esp32PortHandle]) -> None:
    bridge, handle = board
    out = esptool(bridge.path, "read-mac")
    assert "Chip type:          ESP32-D0WD-V3 (revision v3.0)" in out
    assert "Crystal frequency:  40MHz" in out
    assert "MAC:                24:0a:c4:12:34:56" in out
    assert handle.board.rom.mac == bytes.fromhex("240ac4123456")


@pytest.mark.slow  # over a second: the full suite runs it, the fast lane does not
def test_esptool_write_verify_then_the_board_boots_it(
    board: tuple[PtyBridge, Esp32PortHandle], tmp_path: Path
) -> None:
    bridge, handle = board
    app = tmp_path / "app.bin"
    image = app_image(b"esptool_sim_app", 5000)
    app.write_bytes(image)
    data = tmp_path / "data.bin"
    blob = os.urandom(3000)
    data.write_bytes(blob)

    out = esptool(bridge.path, "write-flash", "--compress", "0x10000", str(app))  # FLASH_DEFL_*
    assert f"Wrote {len(image)} bytes" in out and "compressed" in out and "Hash of data verified." in out
    out = esptool(bridge.path, "write-flash", "0x200000", str(data))  # the ROM default: plain FLASH_DATA
    assert f"Wrote {len(blob)} bytes at 0x00200000" in out and "Hash of data verified." in out
    out = esptool(bridge.path, "verify-flash", "0x10000", str(app), "0x200000", str(data))
    assert out.count("Verification successful (digest matched).") == 2
    out = esptool(bridge.path, "flash-id")
    assert "Manufacturer: ef" in out and "Device: 4016" in out and "Detected flash size: 4MB" in out

    flash = handle.board.rom.flash
    assert bytes(flash[0x10000 : 0x10000 + len(image)]) == image
    assert bytes(flash[0x200000 : 0x200000 + len(blob)]) == blob

    with serial.Serial(bridge.path, 115200, timeout=10) as port:
        handle.set_dtr(False)
        handle.set_rts(True)  # EN low through the board's auto-program circuit, IO0 high
        handle.set_rts(False)
        log = port.read_until(b"Calling app_main()\r\n").decode()
    assert "rst:0x1 (POWERON_RESET),boot:0x13 (SPI_FAST_FLASH_BOOT)" in log
    assert "cpu_start: Project name:     esptool_sim_app" in log
    assert f"{len(image)} bytes at 0x10000, MD5 {hashlib.md5(image).hexdigest()}" in log
