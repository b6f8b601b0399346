"""Issue 38, done when: a healthy flash with the real esptool (PyPI, ``--no-stub``, its own DTR/RTS resets)
through the RFC 2217 mirror of ``sim://esp32-rom`` raises no boot loop and no crash. Each of esptool's
resets is a ``reset`` event naming the client, before the boot it caused; the boots are counted, none of
them toward a loop."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from serial_mcp import Engine

pytest.importorskip("esptool")
from tests.pty.test_esptool_sim import app_image
from tests.pty.test_rfc2217_esptool import esptool

pytestmark = [pytest.mark.anyio, pytest.mark.pty, pytest.mark.slow]


@pytest.mark.timeout(400)
async def test_a_healthy_esptool_flash_through_the_mirror_raises_no_boot_loop_and_no_crash(
    tmp_path: Path,
) -> None:
    app = tmp_path / "app.bin"
    app.write_bytes(app_image(b"precise_app", 3000))
    async with Engine() as eng:
        conn = await eng.open("sim://esp32-rom", mirror="rfc2217+esp-reset")
        await conn.read(match="app_main", timeout_ms=5000)
        url = conn.opened.mirror_url or ""
        await esptool(url, "--after", "no-reset", "read-mac")
        await esptool(url, "--after", "no-reset", "write-flash", "0x10000", str(app))
        await esptool(url, "verify-flash", "0x10000", str(app))  # then esptool's hard reset
        c = eng.services.manager.get(conn.id)
        with anyio.fail_after(20):  # the hard reset boots what was flashed
            while b"precise_app" not in bytes(c.read_ring(0, None).data):
                await c.wait_change(1.0, c.rx_end())
        r = await conn.read(from_="now", until=["stage"], timeout_ms=3000)  # its events are scanned
        events = conn.events()
        kinds = [e["kind"] for e in events]
        assert "boot_loop" not in kinds and "crash" not in kinds, events
        resets = [e for e in events if e["kind"] == "reset"]
        boots = [e for e in events if e["kind"] == "boot"]
        assert len(boots) >= 4 and len(resets) == len(boots) - 1  # each boot after the first: esptool's
        # issue 36.7: the client's program name is a named, quoted field (as in test_rfc2217_esptool)
        assert all(e["line"].startswith('DTR/RTS set by program "esptool" (pid ') for e in resets), resets
        assert all(e["line"].isprintable() for e in events)
        status = await conn.get_status()
        assert status.events is not None and status.events["boot_loops"] == 0
        assert r is not None
