"""sim://esp32-rom driven by esptool's own library through the sim's handle: esptool's reset sequences on
DTR/RTS, its ROM-loader client (``ESP32ROM``, as ``--no-stub`` uses it), its flashing commands."""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from collections.abc import Callable, Iterator

import pytest
from mcp import Client

from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import InvalidArgument
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeDevice
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.openers import default_opener
from serial_mcp.serial.sim import SimOpener
from serial_mcp.serial.sim import esp_rom_protocol as p
from serial_mcp.serial.sim.esp32_rom import FACTORY_APP, Esp32Board, Esp32PortHandle
from serial_mcp.serial.sim.timeline import Timeline
from tests.esptool_port import HandlePort
from tests.tool_calls import call

esptool = pytest.importorskip("esptool")
from esptool.bin_image import ELFSection, ESP32FirmwareImage  # type: ignore[import-untyped]  # noqa: E402
from esptool.cmds import attach_flash, write_flash  # type: ignore[import-untyped]  # noqa: E402
from esptool.reset import ClassicReset, HardReset  # type: ignore[import-untyped]  # noqa: E402
from esptool.targets.esp32 import ESP32ROM  # type: ignore[import-untyped]  # noqa: E402
from esptool.util import FatalError  # type: ignore[import-untyped]  # noqa: E402

MAC = (0x24, 0x0A, 0xC4, 0x12, 0x34, 0x56)
APP_UP = b"Calling app_main()\r\n"
WAITING = b"waiting for download\r\n"
DOWNLOAD_BANNER = (
    b"rst:0x1 (POWERON_RESET),boot:0x3 (DOWNLOAD_BOOT(UART0/UART1/SDIO_REI_REO_V2))\r\n" + WAITING
)


def open_board(url: str = "sim://esp32-rom") -> tuple[Esp32PortHandle, HandlePort]:
    handle = SimOpener().open(url, SerialSettings())
    assert isinstance(handle, Esp32PortHandle)
    return handle, HandlePort(handle)


@pytest.fixture
def board() -> Iterator[tuple[Esp32PortHandle, HandlePort]]:
    handle, port = open_board()
    yield handle, port
    port.close()
    handle.close()


@pytest.fixture
def loader() -> Iterator[tuple[Esp32PortHandle, HandlePort, ESP32ROM]]:
    """esptool's ROM client, connected after its own default reset (classic DTR/RTS sequence)."""
    handle, port = open_board()
    esp = ESP32ROM(port)
    esp.connect("default-reset")
    yield handle, port, esp
    port.close()
    handle.close()


def app_image(project: bytes, version: bytes, code: bytes) -> bytes:
    """An app image as esptool's own image writer lays it out (app description first, then RAM code)."""
    img = ESP32FirmwareImage()
    img.entrypoint = 0x40080010
    desc = struct.pack(
        "<II8x32s32s16s16s32s32s",
        0xABCD5432,
        0,
        version,
        project,
        b"12:00:00",
        b"Mar  3 2025",
        b"v5.3",
        hashlib.sha256(code).digest(),
    )
    img.segments.append(ELFSection(b".flash.appdesc", 0x3F400020, desc.ljust(256, b"\0") + b"rodata" * 64, 0))
    img.segments.append(ELFSection(b".iram0.text", 0x40080000, code, 0))
    data: bytes = img.save(None)
    return data


# --- boot modes from DTR/RTS -------------------------------------------------------------------------------


def test_power_on_boots_the_flash_with_an_esp_idf_log(board: tuple[Esp32PortHandle, HandlePort]) -> None:
    handle, port = board
    log = port.read_until(APP_UP)
    assert log.startswith(
        b"ets Jun  8 2016 00:22:57\r\n\r\nrst:0x1 (POWERON_RESET),boot:0x13 (SPI_FAST_FLASH_BOOT)\r\n"
    )
    text = log.decode()
    assert "I (31) boot: ESP-IDF v5.1.2 2nd stage bootloader" in text
    assert "I (36) boot: chip revision: v3.0" in text
    assert "cpu_start: Project name:     hello_world" in text
    assert f"{len(FACTORY_APP)} bytes at 0x10000, MD5 {hashlib.md5(FACTORY_APP).hexdigest()}" in text
    assert handle.board.state == "app" and handle.board.boot_modes == ["flash"]


def test_esptool_classic_reset_puts_the_chip_in_download_mode(
    board: tuple[Esp32PortHandle, HandlePort],
) -> None:
    handle, port = board
    port.read_until(APP_UP)
    ClassicReset(port, reset_delay=0.05)()  # esptool's sequence: EN low via RTS, IO0 low via DTR, release EN
    out = port.read_until(WAITING)
    assert out == b"ets Jun  8 2016 00:22:57\r\n\r\n" + DOWNLOAD_BANNER
    assert handle.board.state == "download"
    assert [(n, lvl) for _, n, lvl in handle.device.line_events][:2] == [("dtr", False), ("rts", True)]


class LateTimeline(Timeline):
    """A simulator clock thread that wakes 150 ms late (a loaded machine)."""

    def after(self, ms: float, action: Callable[[], None]) -> None:
        super().after(ms + 150, action)


def test_io0_is_sampled_when_en_rose_however_late_the_clock_runs() -> None:
    device = FakeDevice("sim://esp32-rom")
    timeline = LateTimeline("late")
    board = Esp32Board(device, timeline)
    device.responder, device.on_line = board, board.on_line
    handle = Esp32PortHandle(device, SerialSettings(), timeline, board)
    port = HandlePort(handle)
    try:
        board.power_on()
        # IO0 is high again 50 ms after EN rose, before the clock wakes
        ClassicReset(port, reset_delay=0.05)()
        assert port.read_until(WAITING).endswith(DOWNLOAD_BANNER)
        assert board.boot_modes == ["flash", "download"]
    finally:
        port.close()
        handle.close()


def test_hard_reset_with_io0_high_boots_the_flash() -> None:
    handle, port = open_board("sim://esp32-rom?boot=download")
    try:
        assert port.read_until(WAITING).endswith(DOWNLOAD_BANNER)
        port.setRTS(False)
        port.setDTR(False)  # both released, as esptool's own reset leaves them: no reset yet
        assert handle.board.state == "download"
        HardReset(port)()  # an RTS pulse, DTR released: EN low, then high with IO0 high
        log = port.read_until(APP_UP)
        assert b"boot:0x13 (SPI_FAST_FLASH_BOOT)" in log and b"Project name:     hello_world" in log
        assert handle.board.boot_modes == ["download", "flash"]
    finally:
        port.close()
        handle.close()


def test_rts_with_dtr_asserted_does_not_reset(board: tuple[Esp32PortHandle, HandlePort]) -> None:
    """The auto-program circuit: EN only goes low while RTS is asserted and DTR is not."""
    handle, port = board
    port.read_until(APP_UP)
    boots = handle.board.boots
    port.setDTR(True)
    port.setRTS(True)
    assert handle.board.boots == boots and handle.board.state == "app"
    port.setDTR(False)  # now RTS alone: EN low, the chip is held in reset
    assert handle.board.state == "reset"


@pytest.mark.anyio
async def test_capture_boot_resets_the_board_and_reads_its_log() -> None:
    manager = ConnectionManager(default_opener())
    async with Client(build_server(manager)) as c:
        cid = (await call(c, "open", {"port": "sim://esp32-rom"}))["connection_id"]
        await call(c, "read", {"connection_id": cid, "match": "app_main", "timeout_ms": 5000})
        reset = {"dtr": False, "rts": True, "hold_ms": 50}
        r = await call(
            c, "capture_boot", {"connection_id": cid, "reset": reset, "match": "app_main", "timeout_ms": 5000}
        )
        assert r["read"]["matched"]
        assert r["read"]["data"].startswith(
            "ets Jun  8 2016 00:22:57\r\n\r\nrst:0x1 (POWERON_RESET),boot:0x13"
        )
    await manager.close_all()


# --- the ROM loader, esptool as the client -----------------------------------------------------------------


def test_esptool_reads_chip_mac_crystal_and_flash_id(
    loader: tuple[Esp32PortHandle, HandlePort, ESP32ROM],
) -> None:
    handle, _port, esp = loader
    assert handle.board.boot_modes == ["flash", "download"]
    assert esp.read_mac() == MAC
    assert esp.get_chip_description() == "ESP32-D0WD-V3 (revision v3.0)"
    assert esp.get_crystal_freq() == 40
    assert not esp.get_secure_boot_enabled() and not esp.get_flash_encryption_enabled()
    esp.flash_spi_attach(0)
    assert esp.flash_id() == 0x1640EF  # Winbond, 4 MB, read through the SPI peripheral's user command
    assert esp.read_spiflash_sfdp(0, 32) == 0x50444653  # "SFDP"


def test_security_info_is_refused_as_an_esp32_rom_does(
    loader: tuple[Esp32PortHandle, HandlePort, ESP32ROM],
) -> None:
    handle, _port, esp = loader
    with pytest.raises(FatalError, match="0105"):
        esp.get_security_info(cache=False)
    assert p.ERR_INVALID_MESSAGE == 0x05 and 0x14 in handle.board.rom.unknown


def test_sync_is_answered_eight_times(loader: tuple[Esp32PortHandle, HandlePort, ESP32ROM]) -> None:
    _handle, port, esp = loader
    esp.flush_input()
    val, data = esp.command(p.SYNC, p.SYNC_PAYLOAD, timeout=1)
    assert val == 0x20120707 and data == b"\0\0\0\0"
    for _ in range(7):
        assert esp.command() == (0x20120707, b"\0\0\0\0")
    port.timeout = 0.2
    with pytest.raises(FatalError):
        esp.read()


def test_change_baud_answers_then_switches(loader: tuple[Esp32PortHandle, HandlePort, ESP32ROM]) -> None:
    handle, port, esp = loader
    esp.change_baud(460800)  # esptool scales the rate for the ROM's own crystal estimate, then follows
    assert abs(handle.board.uart_baud - 460800) < 460800 * 0.01
    assert esp.read_mac() == MAC and handle.board.lost_rx == 0
    port.baudrate = 115200  # the host changes back without telling the chip: nothing gets through
    with pytest.raises(FatalError):
        esp.read_reg(0x40001000, timeout=0.3)
    assert handle.board.lost_rx > 0


def test_write_flash_compressed_then_the_board_boots_the_new_image(
    loader: tuple[Esp32PortHandle, HandlePort, ESP32ROM],
) -> None:
    handle, port, esp = loader
    image = app_image(b"blink", b"2.0.1", os.urandom(3000))
    attach_flash(esp)
    write_flash(esp, [(0x10000, image)], compress=True, no_progress=True)  # DEFL_BEGIN/DATA + MD5 check
    assert bytes(handle.board.rom.flash[0x10000 : 0x10000 + len(image)]) == image
    port.flushInput()
    esp.hard_reset()
    log = port.read_until(APP_UP).decode()
    assert "cpu_start: Project name:     blink" in log and "cpu_start: App version:      2.0.1" in log
    assert f"{len(image)} bytes at 0x10000, MD5 {hashlib.md5(image).hexdigest()}" in log


def test_a_corrupt_image_is_refused_and_the_board_boot_loops(
    loader: tuple[Esp32PortHandle, HandlePort, ESP32ROM],
) -> None:
    handle, port, esp = loader
    image = bytearray(app_image(b"blink", b"2.0.1", os.urandom(1000)))
    image[600] ^= 0xFF  # one bit rot in a segment: the checksum no longer matches
    attach_flash(esp)
    write_flash(esp, [(0x10000, bytes(image))], no_progress=True)  # plain FLASH_BEGIN/DATA
    port.flushInput()
    esp.hard_reset()
    log = port.read_until(b"rst:0x3 (SW_RESET)").decode()
    assert "E (96) esp_image: image at 0x10000 Checksum failed." in log
    assert "E (107) boot: No bootable app partitions in the partition table" in log
    assert APP_UP.decode() not in log and handle.board.state == "booting"


def test_rom_errors_come_as_rom_status_codes(loader: tuple[Esp32PortHandle, HandlePort, ESP32ROM]) -> None:
    handle, _port, esp = loader
    flash = handle.board.rom.flash
    flash[0x20000:0x21000] = b"\x5a" * 0x1000  # something already in that sector
    with pytest.raises(FatalError, match="0106"):  # no SPI_ATTACH yet
        esp.flash_begin(0x1000, 0x20000)
    esp.flash_spi_attach(0)
    esp.flash_begin(0x400, 0x20000)
    assert set(flash[0x20000:0x21000]) == {0xFF}  # the ROM erases the sector at FLASH_BEGIN
    block = bytes(range(256)) * 4
    _, data = esp.command(
        p.FLASH_DATA, struct.pack("<IIII", len(block), 0, 0, 0) + block, chk=esp.checksum(block) ^ 1
    )
    assert data[:2] == b"\x01\x07"  # checksum error, and nothing written
    assert set(flash[0x20000:0x21000]) == {0xFF}
    with pytest.raises(FatalError, match="0105"):  # a frame longer than any block the ROM takes
        esp.check_command("oversize", p.FLASH_DATA, b"\0" * (p.MAX_DATA_BLOCK + 64))
    with pytest.raises(FatalError, match="0109"):
        esp.flash_md5sum(0x3FF000, 0x2000)  # past the end of the 4 MB flash
    _, data = esp.command(0xD0)  # ERASE_FLASH: the stub's, unknown to the ROM
    assert data == b"\x01\x05\x00\x00"


def test_inflating_past_the_declared_size_is_refused(
    loader: tuple[Esp32PortHandle, HandlePort, ESP32ROM],
) -> None:
    handle, _port, esp = loader
    bomb = zlib.compress(b"\0" * 400_000, 9)  # 400 kB from a few hundred bytes
    assert len(bomb) < 0x400
    esp.flash_spi_attach(0)
    esp.flash_defl_begin(0x400, len(bomb), 0x30000)
    with pytest.raises(FatalError, match="010B"):
        esp.flash_defl_block(bomb, 0)
    flash = handle.board.rom.flash
    assert set(flash[0x30000:0x31000]) == {0xFF}, "the refused block wrote nothing"


def test_ram_download_then_jump_goes_quiet(loader: tuple[Esp32PortHandle, HandlePort, ESP32ROM]) -> None:
    handle, _port, esp = loader
    with pytest.raises(FatalError, match="010F"):
        esp.mem_begin(16, 1, 16, 0x50000000 + 0x10000)  # not RAM
    code = b"\x06\x00\x00\x00" * 4
    esp.mem_begin(len(code), 1, len(code), 0x40080000)
    esp.mem_block(code, 0)
    esp.mem_finish(0x40080000)
    assert handle.board.state == "halted"  # running code the simulation cannot execute, until a reset


# --- options ------------------------------------------------------------------------------------------------


def test_boot_option_is_checked() -> None:
    with pytest.raises(InvalidArgument, match=r"Did you mean .boot.\?"):
        SimOpener().open("sim://esp32-rom?bot=download", SerialSettings())
    with pytest.raises(InvalidArgument, match="boot must be flash or download"):
        SimOpener().open("sim://esp32-rom?boot=usb", SerialSettings())
