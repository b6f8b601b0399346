"""Issue 24, must hold: the ESP32 ROM simulator "boots" a crashing image, and the connection's detector finds
each panic (its cause and program counter), the reset it caused, and the boot loop they make — end to end
through ``capture_boot``, as an agent that just flashed a bad build would see it.
"""

from __future__ import annotations

import pytest

from serial_mcp import Engine
from serial_mcp.engine.option_types import ResetSpec
from serial_mcp.serial.sim.esp32_rom import APP_OFFSET, PANIC_MARK
from serial_mcp.serial.sim.esp_app_image import build_app_image

pytestmark = pytest.mark.anyio

CODE_LOAD = 0x400D0020  # where build_app_image maps the code segment
RESET: ResetSpec = {"dtr": False, "rts": True, "hold_ms": 50}  # EN low through the auto-program circuit


async def test_a_panicking_app_is_a_crash_per_boot_then_a_boot_loop() -> None:
    async with Engine() as engine:
        conn = await engine.open("sim://esp32-rom")
        r = await conn.read(match="app_main", timeout_ms=5000)
        assert r.matched and [e["kind"] for e in r.events or [] if e["kind"] != "stage"] == ["boot"]  # fine
        code = PANIC_MARK + b"LoadProhibited\0"
        image = build_app_image("crasher", "0.1", "v5.1.2", ("Jan  1 2024", "00:00:00"), code)
        board = engine.services.manager.get(conn.id).handle.board  # type: ignore[attr-defined]
        board.rom.flash[APP_OFFSET : APP_OFFSET + len(image)] = image  # as esptool's write_flash leaves it
        boot = await conn.capture_boot(reset=RESET, until=["boot_loop"], timeout_ms=10_000)
        read = boot.read
        assert read.stop_reason == "event"
        events = boot.events or []
        crashes = [e for e in events if e["kind"] == "crash"]
        # capture_boot's own reset is a reset with its cause, its boot no part of a loop (issue 38): the
        # three boots the panics caused make the loop
        assert [e["text"] for e in events if e["kind"] == "reset"] == ["capture_boot"]
        assert len(crashes) == 3 and crashes[0]["reason"] == "LoadProhibited"
        assert all(e["reset_reason"] == "SW_CPU_RESET" for e in crashes)
        raw = read.data.encode()
        first = raw.index(b"Guru Meditation Error")
        assert crashes[0]["offset"] == read.from_offset + first
        loop = [e for e in events if e["kind"] == "boot_loop"]
        assert len(loop) == 1 and loop[0]["severity"] == "critical"
        again = await conn.read(from_="now", until=["crash"], timeout_ms=10_000)  # it goes on crashing
        assert again.stop_reason == "event"
        assert [e["reason"] for e in again.events or [] if e["kind"] == "crash"] == ["LoadProhibited"]
        full = [e for e in conn.events() if e["kind"] == "crash"]
        assert full[0]["pc"] == f"0x{CODE_LOAD + 0x14:08x}"
        assert full[0]["backtrace"][:2] == [f"0x{CODE_LOAD + 0x14:08x}", f"0x{CODE_LOAD + 0x42:08x}"]
        lines = boot.summary().splitlines()  # most important first: the loop, its crashes, then reset and boots
        assert lines[0].startswith("⚠ boot loop at offset")
        assert all(line.startswith("⚠ crash at offset") for line in lines[1:4])
        assert lines[4].startswith("↻ reset at offset") and lines[5].startswith("… and ")


async def test_an_agent_sees_the_boot_in_the_first_line_of_text_and_in_structured_content() -> None:
    from mcp import Client

    from serial_mcp.mcp.server import build_server
    from serial_mcp.serial.manager import ConnectionManager
    from serial_mcp.serial.openers import default_opener

    manager = ConnectionManager(default_opener())
    async with Client(build_server(manager)) as client:
        opened = await client.call_tool("open", {"port": "sim://esp32-rom"})
        cid = (opened.structured_content or {})["connection_id"]
        r = await client.call_tool("read", {"connection_id": cid, "until": ["stage"], "timeout_ms": 5000})
        assert not r.is_error
        text = "".join(getattr(c, "text", "") for c in r.content)
        assert text.startswith("↻ boot at offset 0: ets Jun  8 2016 00:22:57 (POWERON_RESET)\n")
        structured = r.structured_content or {}
        assert structured["stop_reason"] == "event"
        assert [e["kind"] for e in structured["events"]][:2] == ["boot", "stage"]
        status = await client.call_tool("get_status", {"connection_id": cid})
        assert (status.structured_content or {})["events"]["boots"] == 1
        bad = await client.call_tool("read", {"connection_id": cid, "until": ["crsh"]})
        assert bad.is_error
    await manager.close_all()
