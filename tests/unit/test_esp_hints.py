"""Issue 37.7: the simulators are findable (every built-in one named on its own line of the server's
instructions), and the text of an open says which mirror esptool needs on an ESP32: the simulator and
Espressif USB devices for sure, CP210x/CH34x bridges as "if this is an ESP32"."""

from __future__ import annotations

import pytest
from mcp import Client

from serial_mcp import messages
from serial_mcp.core.esp_ports import esptool_hint
from serial_mcp.core.port_info import PortInfo
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.openers import default_opener
from serial_mcp.serial.sim import DEVICES

ESP_MIRROR = "rfc2217+esp-reset"


def test_every_simulator_has_its_own_line_in_the_instructions() -> None:
    lines = messages.SERVER_INSTRUCTIONS.splitlines()
    for kind in DEVICES:
        mine = [line for line in lines if line.startswith(f"- sim://{kind}: ")]
        assert len(mine) == 1, kind


@pytest.mark.parametrize(
    ("port", "vid", "mirror", "says"),
    [
        ("sim://esp32-rom", None, None, [ESP_MIRROR, "--no-stub"]),
        ("sim://esp32-rom?boot=download", None, "rfc2217", [ESP_MIRROR, "--no-stub"]),
        ("sim://esp32-rom", None, ESP_MIRROR, ["--no-stub"]),
        ("/dev/ttyACM0", "303a", None, ["Espressif", ESP_MIRROR]),
        ("/dev/ttyACM0", "303A", "rfc2217", ["Espressif", ESP_MIRROR]),
        ("/dev/ttyUSB0", "10c4", None, ["CP210x", "if this is an ESP32", ESP_MIRROR]),
        ("/dev/ttyUSB0", "1a86", "ro", ["CH34x", "if this is an ESP32", ESP_MIRROR]),
    ],
)
def test_the_hint_names_the_mirror_esptool_needs(
    port: str, vid: str | None, mirror: str | None, says: list[str]
) -> None:
    hint = esptool_hint(port, vid, mirror)
    assert hint is not None and all(s in hint for s in says), hint
    if mirror == ESP_MIRROR:
        assert ESP_MIRROR not in hint  # already there: only what is still needed


@pytest.mark.parametrize(
    ("port", "vid", "mirror"),
    [
        ("/dev/ttyUSB0", "0403", None),
        ("/dev/ttyACM0", "303a", ESP_MIRROR),
        ("sim://modem", None, None),
        ("/dev/ttyS0", None, None),
    ],
)
def test_no_hint_where_esptool_has_nothing_to_do(port: str, vid: str | None, mirror: str | None) -> None:
    assert esptool_hint(port, vid, mirror) is None


def usb(name: str, vid: str, pid: str) -> PortInfo:
    return PortInfo(
        name,
        "USB JTAG/serial debug unit",
        f"USB VID:PID={vid}:{pid}",
        vid,
        pid,
        "AB12",
        None,
        None,
        None,
        "1-1",
        "usb",
    )


@pytest.mark.anyio
async def test_open_text_of_an_esp32_says_rfc2217_esp_reset() -> None:
    opener = FakeOpener()
    opener.add("esp0")
    opener.add("ftdi0")
    ports = [usb("esp0", "303a", "1001"), usb("ftdi0", "0403", "6001")]
    async with Client(build_server(ConnectionManager(opener), port_lister=lambda: ports)) as c:
        r = await c.call_tool("open", {"port": "esp0"})
        text = r.content[0].text  # type: ignore[union-attr]
        assert "Espressif" in text and f"mirror='{ESP_MIRROR}'" in text
        r = await c.call_tool("open", {"port": "ftdi0"})
        assert "esptool" not in r.content[0].text  # type: ignore[union-attr]
    async with Client(build_server(ConnectionManager(default_opener()), port_lister=lambda: [])) as c:
        r = await c.call_tool("open", {"port": "sim://esp32-rom"})
        text = r.content[0].text  # type: ignore[union-attr]
        assert f"mirror='{ESP_MIRROR}'" in text and "--no-stub" in text
        assert r.structured_content is not None and "--no-stub" in r.structured_content["hint"]
