"""The real esptool (from PyPI, ``--no-stub``, its own reset) flashes ``sim://esp32-rom`` through the
RFC 2217 mirror of a serial-mcp connection that records it: one capture from the reset into download
mode, through read-mac, write-flash and verify, to the boot log of the new image after esptool's
hard reset (issue 23.1 / 23.4)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from serial_mcp import Engine
from serial_mcp.core.capture import parse_capture

pytest.importorskip("esptool")
from tests.pty.test_esptool_sim import app_image
from tests.pty.test_rfc2217_mirror import socket_fds  # (needs esptool)

pytestmark = [pytest.mark.anyio, pytest.mark.pty, pytest.mark.slow]


async def esptool(url: str, *args: str, ok: bool = True) -> str:
    cmd = [sys.executable, "-m", "esptool", "--chip", "esp32", "--no-stub", "--port", url, *args]
    r = await anyio.to_thread.run_sync(
        lambda: subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    )
    assert (r.returncode == 0) == ok, r.stdout + r.stderr
    return r.stdout + r.stderr


# three esptool sessions: ~1 min, since pyserial's client renegotiates the port settings (50 ms
# sleeps) each time esptool changes its read timeout, about 0.2 s per command through any server
@pytest.mark.timeout(400)
async def test_esptool_flashes_the_sim_through_the_mirror_in_one_capture(tmp_path: Path) -> None:
    image = app_image(b"rfc2217_mirror_app", 6000)
    app = tmp_path / "app.bin"
    app.write_bytes(image)
    async with Engine(capture_dir=tmp_path) as eng:
        conn = await eng.open("sim://esp32-rom", mirror="rfc2217+esp-reset", record="flash.jsonl")
        url = conn.opened.mirror_url or ""
        out = await esptool(url, "--after", "no-reset", "read-mac")
        assert "MAC:                24:0a:c4:12:34:56" in out
        out = await esptool(url, "--after", "no-reset", "write-flash", "0x10000", str(app))
        assert "Hash of data verified." in out
        out = await esptool(url, "verify-flash", "0x10000", str(app))  # then the default hard reset
        assert "Verification successful (digest matched)." in out
        c = eng.services.manager.get(conn.id)
        with anyio.fail_after(20):  # the hard reset boots what was flashed
            while b"Calling app_main()" not in bytes(c.read_ring(0, None).data):
                await c.wait_change(1.0, c.rx_end())
    capture = parse_capture((tmp_path / "flash.jsonl").read_text().splitlines())
    rx = capture.payload("rx").decode(errors="replace")
    download = rx.index("boot:0x3 (DOWNLOAD_BOOT(UART0/UART1/SDIO_REI_REO_V2))")
    boot = rx.rindex("rst:0x1 (POWERON_RESET),boot:0x13 (SPI_FAST_FLASH_BOOT)")
    assert download < boot  # the reset into the loader, then the boot of what was flashed
    assert "cpu_start: Project name:     rfc2217_mirror_app" in rx[boot:]
    assert f"{len(image)} bytes at 0x10000, MD5 {hashlib.md5(image).hexdigest()}" in rx[boot:]
    markers = [e.fields.get("label") for e in capture.events if e.type == "marker"]
    assert markers.count("rfc2217 attach") == 3 and markers.count("rfc2217 detach") == 3
    clients = [e.fields["client"] for e in capture.events if e.fields.get("label") == "rfc2217 attach"]
    assert all(c.startswith('program "esptool" (pid ') for c in clients), clients  # named from /proc
    lines = [e for e in capture.events if e.type == "control"]
    assert any(e.fields.get("esp_reset") for e in lines)  # the download reset, played on the port
    assert capture.payload("tx").count(b"\xc0\x00\x08") >= 3  # esptool's SLIP SYNC, one per session


async def test_without_esp_reset_the_lines_go_through_as_the_client_times_them() -> None:
    """Off by default: pyserial's client takes >= 50 ms per line change, so esptool's classic reset
    releases EN with IO0 high for that long and the board boots its flash, as a real auto-program
    circuit would (esptool says so); a client opening the port (DTR and RTS on) resets nothing."""
    async with Engine() as eng:
        conn = await eng.open("sim://esp32-rom", mirror="rfc2217")
        out = await esptool(conn.opened.mirror_url or "", "--connect-attempts", "1", "read-mac", ok=False)
        assert "Wrong boot mode detected (0x13)" in out
        status = await conn.get_status()
        assert status.rfc2217 is not None and status.rfc2217["esp_reset"] is False


async def test_esptool_killed_mid_flash_leaves_nothing_behind_and_the_next_one_connects(
    tmp_path: Path,
) -> None:
    app = tmp_path / "big.bin"
    app.write_bytes(app_image(b"big_app", 100_000))  # ~100 blocks: 20 s through pyserial's client
    sockets = socket_fds()
    async with Engine() as eng:
        conn = await eng.open("sim://esp32-rom", mirror="rfc2217+esp-reset")
        c = eng.services.manager.get(conn.id)
        url = conn.opened.mirror_url or ""
        cmd = [sys.executable, "-m", "esptool", "--chip", "esp32", "--no-stub", "--port", url,
               "--after", "no-reset", "write-flash", "0x10000", str(app)]  # fmt: skip
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            with anyio.fail_after(120):  # the flash is under way: blocks are going out
                while c.rfc2217.tx_forwarded < 8 * 1024:
                    await c.wait_change(1.0, c.rx_end())
        finally:
            proc.kill()
            await anyio.to_thread.run_sync(proc.wait)
        with anyio.fail_after(30):
            while c.lent_to is not None:
                await c.wait_change(0.2)
        assert c.rfc2217.client is None and c.settings.baud_rate == 115200
        out = await esptool(url, "--after", "no-reset", "read-mac")  # the next client gets the board
        assert "MAC:                24:0a:c4:12:34:56" in out
    assert socket_fds() == sockets  # and the conftest checks that no thread is left
