"""The port-handle interface is declared (serial/handle.py): every handle the engine can be given
is a ``PortHandle``, and each optional capability is offered exactly where it is claimed, so the
engine's ``isinstance`` probes find what the handle really has."""

from __future__ import annotations

import ast
import os
import tty
from collections.abc import Iterator
from pathlib import Path

import pytest

import serial_mcp
from serial_mcp.core.settings import SerialSettings
from serial_mcp.serial import handle as h
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.openers import default_opener
from serial_mcp.serial.system_open import SystemOpener

CAPTURES = Path(__file__).resolve().parents[2] / "captures"

CLAIMS: dict[str, set[type]] = {
    "system": {h.BoundedWrite, h.NonBlockingWrite, h.Lingering, h.LowLatencyAware, h.DeviceNode},
    "fake": set(),
    "sim": set(),
    "replay": {h.ReportsProgress},
}


@pytest.fixture
def pty_path() -> Iterator[str]:
    master, slave = os.openpty()
    tty.setraw(slave)
    try:
        yield os.ttyname(slave)
    finally:
        os.close(master)
        os.close(slave)


def _open(kind: str, pty_path: str) -> h.PortHandle:
    settings = SerialSettings()
    if kind == "system":
        return SystemOpener().open(pty_path, settings)
    if kind == "fake":
        fakes = FakeOpener()
        fakes.add("fake0")
        return fakes.open("fake0", settings)
    if kind == "sim":
        return default_opener().open("sim://modem", settings)
    return default_opener().open(f"replay://{CAPTURES / 'at-modem-session.jsonl'}", settings)


@pytest.mark.parametrize("kind", list(CLAIMS))
def test_each_handle_has_what_it_claims_and_no_more(kind: str, pty_path: str) -> None:
    port = _open(kind, pty_path)
    try:
        assert isinstance(port, h.PortHandle)
        offered = {cap for cap in h.CAPABILITIES if isinstance(port, cap)}
        assert offered == CLAIMS[kind]
        if h.LowLatencyAware not in offered:
            assert h.low_latency(port) is None
    finally:
        port.close()


@pytest.mark.slow  # over a second: the full suite runs it, the fast lane does not
def test_the_engine_never_probes_a_handle_with_getattr() -> None:
    """Capabilities are asked for with ``isinstance`` against the declared protocols; a
    ``getattr(…handle…, "name")`` would be an undeclared capability."""
    root = Path(serial_mcp.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in {
                "getattr",
                "hasattr",
            }:
                target = ast.unparse(node.args[0]) if node.args else ""
                if target.endswith("handle"):
                    found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "declare the capability in serial/handle.py and probe it with isinstance:\n" + "\n".join(found)
