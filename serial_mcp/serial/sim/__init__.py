"""Built-in simulated devices (``sim://KIND``): try serial-mcp, and test it, with no hardware attached.

One module per device: ``modem`` (``sim://modem``, ``sim://echo``), ``slow_modem``, ``reboot_board``,
``micropython`` (with ``micropython_exec`` / ``micropython_values``, its script runner) and
``esp32_rom``; ``timeline`` is the clock the devices that answer later share. ``SimOpener`` routes a
``sim://KIND?options`` URL to its device through ``DEVICES`` and imports the device's module when such
a port is first opened, not at start-up (tests/unit/test_startup_imports.py checks it).

What a simulated device implements: an opener ``open_KIND(port, settings)`` that returns an open
``PortHandle`` — the interface in ``serial_mcp/serial/handle.py``, the only one the engine sees (it
asks for optional capabilities with ``isinstance``, never ``getattr``). Devices build on
``serial.fake``: a ``FakeDevice`` (bytes the host wrote, bytes it will read, DTR/RTS/BREAK with an
``on_line`` hook) behind a ``FakePortHandle``; a device with a clock (replies in parts, countdowns,
resets) takes a ``timeline.Timeline`` and a ``timeline.TimedPortHandle``, which stops the clock when
the port closes. Options after ``?`` are the device's to parse; a bad one is an ``InvalidArgument``
raised before the timeline's thread starts, so a refused open leaves nothing running.

To add one (another ROM loader, say): write ``serial_mcp/serial/sim/KIND.py`` with its opener, add
``"KIND": (module, opener name)`` to ``DEVICES``, its user-facing text to ``serial_mcp/messages.py``,
its module to ``DEFERRED`` in tests/unit/test_startup_imports.py and a row to
docs/simulated-devices.md.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from serial_mcp import messages
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import ErrorCode, PortError
from serial_mcp.serial.fake import FakePortHandle

# kind -> (module, its opener): ``opener(port, settings)`` gives the port's handle
DEVICES = {
    "modem": ("serial_mcp.serial.sim.modem", "open_modem"),
    "echo": ("serial_mcp.serial.sim.modem", "open_echo"),
    "micropython": ("serial_mcp.serial.sim.micropython", "open_micropython"),
    "slow-modem": ("serial_mcp.serial.sim.slow_modem", "open_slow_modem"),
    "reboot-board": ("serial_mcp.serial.sim.reboot_board", "open_reboot_board"),
    "esp32-rom": ("serial_mcp.serial.sim.esp32_rom", "open_esp32_rom"),
}


def device_opener(kind: str) -> Callable[[str, SerialSettings], FakePortHandle]:
    """The opener of a ``DEVICES`` kind, its module imported now (once)."""
    module, name = DEVICES[kind]
    opener: Callable[[str, SerialSettings], FakePortHandle] = getattr(importlib.import_module(module), name)
    return opener


class SimOpener:
    """Opens the ``sim://`` ``DEVICES`` (options after ``?``)."""

    KINDS = tuple(DEVICES)

    def open(self, port: str, settings: SerialSettings) -> FakePortHandle:
        kind = port.removeprefix("sim://").partition("?")[0].strip("/")
        if kind not in DEVICES:
            raise PortError(
                ErrorCode.PORT_NOT_FOUND,
                messages.SIM_UNKNOWN.format(port=port, kinds=", ".join(self.KINDS)),
                port=port,
            )
        return device_opener(kind)(port, settings)
