"""Which RFC 2217 mirror esptool needs on a port (issue 37.7), said in the text of the open.

esptool resets an ESP32 into its ROM loader with DTR/RTS; through pyserial's RFC 2217 client each line
change takes >= 50 ms, so on a plain ``mirror="rfc2217"`` the board boots its flash instead ("Wrong boot
mode detected (0x13)", after ~22 s of retries). ``rfc2217+esp-reset`` plays the download reset on the
port itself. A port is an ESP32 for sure when it is ``sim://esp32-rom`` or has Espressif's USB vendor id;
CP210x and CH34x bridges sit on most ESP32 dev boards but on many other boards too, so for them the
hint is conditional. Sans-IO: the port name, its USB vendor id and the mirror asked for.
"""

from __future__ import annotations

from typing import Final

from serial_mcp import messages

ESP_MIRROR: Final = "rfc2217+esp-reset"
ESPRESSIF_VID: Final = "303a"
BRIDGE_VIDS: Final = {"10c4": "CP210x", "1a86": "CH34x"}  # Silicon Labs, WCH (CH340, CH343, CH9102)
SIMULATOR: Final = "sim://esp32-rom"


def esptool_hint(port: str, vid: str | None, mirror: str | None) -> str | None:
    """One sentence for the open's text, or None when the port is no ESP32 candidate (or already
    mirrored the way esptool needs, on real hardware)."""
    if port.partition("?")[0].rstrip("/") == SIMULATOR:
        return messages.ESP_HINT_SIM_MIRRORED if mirror == ESP_MIRROR else messages.ESP_HINT_SIM
    if mirror == ESP_MIRROR:
        return None
    v = (vid or "").lower().removeprefix("0x").zfill(4)
    if v == ESPRESSIF_VID:
        return messages.ESP_HINT_ESPRESSIF
    if v in BRIDGE_VIDS:
        return messages.ESP_HINT_BRIDGE.format(bridge=BRIDGE_VIDS[v])
    return None
