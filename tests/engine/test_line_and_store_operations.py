"""Lines, settings, boots, logs, captures, profiles, checksums, baud detection and file transfer
through the engine (issue 27's engine-level layer): each asserts what the device saw or what the
stores hold, not only the result's shape."""

from __future__ import annotations

import base64
import json

import pytest

from serial_mcp.core.checksums import compute
from serial_mcp.errors import AccessError, InvalidArgument
from serial_mcp.serial.fake import FakeDevice
from tests.engine.conftest import PORT, Bench
from tests.xmodem_peer import xmodem_crc_sender

pytestmark = pytest.mark.anyio

UBOOT = b"\r\nU-Boot 2024.01 (Jan 01 2024 - 00:00:00 +0000)\r\n\r\nDRAM:  512 MiB\r\nHit any key to stop autoboot\r\n=> "


async def test_set_dtr_rts_drives_the_lines_and_says_where_they_are(bench: Bench) -> None:
    conn = await bench.open()
    lines = await conn.set_dtr_rts(dtr=False, rts=True)
    assert (lines.dtr, lines.rts) == (False, True)
    assert bench.device.lines["dtr"] is False and bench.device.lines["rts"] is True


async def test_send_break_sets_then_releases_the_break(bench: Bench) -> None:
    conn = await bench.open()
    sent = await conn.send_break(duration_ms=30)
    assert sent.duration_ms == 30
    assert [level for _, name, level in bench.device.line_events if name == "break"] == [True, False]
    assert bench.device.lines["break"] is False  # released again


async def test_reconfigure_and_flow_control_reach_the_port_and_report_the_previous(bench: Bench) -> None:
    conn = await bench.open(baud_rate=115200)
    changed = await conn.reconfigure(baud_rate=57600, data_bits=7)
    assert changed.previous["baud_rate"] == 115200 and changed.settings["baud_rate"] == 57600
    assert (bench.device.settings_history[-1].baud_rate, bench.device.settings_history[-1].data_bits) == (57600, 7)
    flow = await conn.set_flow_control(flow_control="hardware")
    assert flow.settings["flow_control"] == "hardware"
    assert bench.device.settings_history[-1].flow_control == "hardware"


async def test_capture_boot_resets_the_board_and_reads_its_boot_from_the_reset(bench: Bench) -> None:
    def boots_when_released(dev: FakeDevice, name: str, level: bool) -> None:
        if name == "dtr" and level:  # EN released: the board boots
            dev.feed(UBOOT)

    conn = await bench.open()
    bench.device.feed(b"old output before the reset\r\n")
    await conn.read(max_bytes=1, timeout_ms=2000)
    bench.device.on_line = boots_when_released
    boot = await conn.capture_boot(reset={"dtr": False, "hold_ms": 20}, match="=> ", timeout_ms=3000)
    assert boot.read.matched and boot.read.data.startswith("\r\nU-Boot 2024.01")
    assert "old output" not in boot.read.data and boot.bytes_before_mark > 0
    # issue 38.1: the reset capture_boot caused is reported, with its cause, before the boot it brought
    events = boot.events or []
    assert [e["kind"] for e in events][:2] == ["reset", "boot"]
    assert events[0]["reason"] == "capture_boot"


async def test_the_log_holds_the_traffic_in_order_and_clear_log_empties_it(bench: Bench) -> None:
    conn = await bench.open()
    await conn.transact("AT\r", match="OK", timeout_ms=2000)
    log = await conn.get_log(payloads=True)
    kinds = [e["type"] for e in log.events]
    assert kinds.index("tx") < kinds.index("rx")  # the command before its reply
    cleared = await conn.clear_log()
    assert cleared.events_cleared == len(log.events)
    assert (await conn.get_log()).events == []


async def test_record_and_export_write_capture_files_the_store_lists(bench: Bench) -> None:
    conn = await bench.open()
    started = await conn.record(action="start", path="session.jsonl")
    assert started.recording
    await conn.transact("AT\r", match="OK", timeout_ms=2000)
    stopped = await conn.record(action="stop")
    assert not stopped.recording and stopped.events_written > 0
    exported = await conn.export_log(path="all.jsonl")
    assert exported.events_written > 0
    names = sorted(c.name for c in (await bench.engine.list_captures()).captures)
    assert names == ["all.jsonl", "session.jsonl"]
    lines = (bench.tmp / "captures" / "session.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["format"] == "serial-mcp-capture"
    events = [json.loads(line) for line in lines[1:]]
    assert [(e["type"], e["text"]) for e in events if e["type"] in ("tx", "rx")][:1] == [("tx", "AT\r")]


async def test_profiles_are_saved_changed_rolled_back_opened_and_deleted(bench: Bench) -> None:
    conn = await bench.open(baud_rate=9600)
    saved = await conn.save_profile(name="modem")
    assert saved.revision == 1
    changed = await bench.engine.configure(profile="modem", defaults={"baud_rate": 19200})
    assert changed.revision == 2
    names = [p["name"] for p in (await bench.engine.list_profiles()).profiles]
    assert "modem" in names  # beside the profile the first open made for this USB device
    rolled = await bench.engine.rollback_profile(name="modem", to_revision=1)
    assert rolled.revision == 3  # a rollback is a new revision with the old settings
    await conn.close()
    reopened = await bench.engine.open_profile("modem")
    assert reopened.opened.port == PORT and reopened.opened.baud_rate == 9600
    await reopened.close()
    await bench.engine.delete_profile(name="modem")
    assert "modem" not in [p["name"] for p in (await bench.engine.list_profiles()).profiles]


async def test_compute_checksum_gives_the_catalogue_check_value(bench: Bench) -> None:
    crc = await bench.engine.compute_checksum(data="123456789", algorithm="crc16_modbus")
    assert crc.checksum == 0x4B37 == compute("crc16_modbus", b"123456789")
    assert crc.width_bytes == 2


async def test_detect_baud_tries_each_candidate_and_puts_the_rate_back(bench: Bench) -> None:
    conn = await bench.open(baud_rate=115200)
    found = await conn.detect_baud(candidates=[9600, 19200], window_ms=50)
    tried = [s.baud_rate for s in bench.device.settings_history]
    assert 9600 in tried and 19200 in tried and tried[-1] == 115200
    assert found.restored_baud_rate == 115200
    assert sorted(r["baud_rate"] for r in found.ranked) == [9600, 19200]


async def test_file_transfer_receives_an_xmodem_file_from_the_device(bench: Bench) -> None:
    conn = await bench.open()
    bench.device.responder = xmodem_crc_sender(b"firmware")
    got = await conn.file_transfer(direction="receive", protocol="xmodem_crc")
    assert got.ok and got.blocks == 1 and got.data is not None
    assert base64.b64decode(got.data).rstrip(b"\x1a") == b"firmware"


async def test_lend_status_says_the_port_is_ours(bench: Bench) -> None:
    conn = await bench.open()
    status = await conn.lend(action="status")
    assert status.state == "open" and status.port == PORT


async def test_an_unknown_option_is_refused_and_the_device_sees_nothing(bench: Bench) -> None:
    conn = await bench.open()
    with pytest.raises(InvalidArgument):
        await conn.write("AT\r", pacee=5)  # type: ignore[call-arg]
    assert bytes(bench.device.written) == b""


async def test_a_read_only_engine_refuses_writes_before_the_device_sees_them(bench: Bench) -> None:
    from serial_mcp.api import Engine

    async with Engine(opener=bench.opener, read_only=True) as ro:
        conn = await ro.open(PORT)
        with pytest.raises(AccessError):
            await conn.write("AT\r")
    assert bytes(bench.device.written) == b""
