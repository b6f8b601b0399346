"""Issue 38.2, live: a Cortex-M3 (QEMU ``mps2-an385``) running tests/firmware/cortex_m/fault-demo.elf faults for
real — a NULL write under the MPU, an undefined instruction, a failed configASSERT — and its fault handler
prints the report of Zephyr, nRF Connect SDK, CmBacktrace, Mbed OS or FreeRTOS from the real stacked frame.
Through serial-mcp opened with that ELF, each is one crash at the report's first line, and the result's text
line names the faulting function and its caller at file:line. The ELF is committed (its sources and
``build.sh`` beside it): only qemu-system-arm is needed.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.firmware_elf import ElfScope
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.openers import default_opener
from tests.firmware.agent import Agent
from tests.firmware.conftest import SKIP_PREFIX
from tests.firmware.machines import Machine
from tests.firmware.test_crash_events import _offset_of

pytestmark = pytest.mark.anyio

FIRMWARE = Path(__file__).resolve().parent / "cortex_m"
ELF = FIRMWARE / "fault-demo.elf"
QEMU_ARM = "qemu-system-arm"
READY = "fault-demo ready"
NULL_WRITE = " — sensor_store at app.c:13 ← app_task at app.c:19"


@pytest.fixture
def cortex_m_url(tmp_path: Path) -> Iterator[str]:
    """socket:// URL of the Cortex-M3 console; the machine starts when it is opened."""
    if shutil.which(QEMU_ARM) is None:
        pytest.skip(f"{SKIP_PREFIX}: {QEMU_ARM} not found (apt-get install qemu-system-arm)")
    argv = [QEMU_ARM, "-M", "mps2-an385", "-nographic", "-monitor", "none", "-kernel", str(ELF)]
    machine = Machine(argv, tmp_path).start()
    try:
        yield machine.url
    finally:
        machine.kill()


@pytest.fixture
async def fw_agent() -> AsyncIterator[Agent]:
    """serial-mcp in-process, allowed to read the firmware's ELF (``--firmware-dir tests/firmware/cortex_m``)."""
    manager = ConnectionManager(default_opener())
    async with Client(build_server(manager, elf_scope=ElfScope(firmware_dirs=(FIRMWARE,)))) as client:
        yield Agent(client)
    await manager.close_all()


async def _fault(agent: Agent, url: str, mode: str) -> tuple[str, dict[str, Any], str]:
    """Open with the ELF, wait for the firmware, send ``mode``, read until the crash: (conn, result, text)."""
    conn = (await agent.call("open", {"port": url, "elf": str(ELF)}))["connection_id"]
    r = await agent.call("read", {"connection_id": conn, "match": READY, "timeout_ms": 30_000})
    assert r["stop_reason"] == "match", r
    args = {"connection_id": conn, "data": mode, "until": ["crash"], "timeout_ms": 30_000}
    failed, result, text = await agent.raw("transact", args)
    assert not failed and result is not None, text
    return str(conn), result, text


def _crash(result: dict[str, Any]) -> dict[str, Any]:
    crashes: list[dict[str, Any]] = [e for e in result.get("events") or [] if e["kind"] == "crash"]
    assert len(crashes) == 1, result
    return crashes[0]


@pytest.mark.parametrize(
    ("mode", "head", "where"),
    [
        ("z", "E: ***** HARD FAULT *****", NULL_WRITE),  # Zephyr 3.x, minimal log
        ("m", "<err> os: ***** MPU FAULT *****", NULL_WRITE),  # Zephyr 3.x, full log
        ("o", "***** MPU FAULT *****", " — sensor_store at app.c:13"),  # Zephyr 1.x: no LR printed
        ("c", "Fault on interrupt or bare metal(no OS) environment", NULL_WRITE + " ← main at fault_demo.c:"),
        ("b", "++ MbedOS Fault Handler ++", NULL_WRITE),
    ],
)
async def test_a_real_fault_report_is_one_crash_naming_the_function_and_its_caller(
    fw_agent: Agent, cortex_m_url: str, mode: str, head: str, where: str
) -> None:
    _, r, text = await _fault(fw_agent, cortex_m_url, mode)
    read = r["read"]
    crash = _crash(r)
    assert crash["offset"] == _offset_of(read["data"], head, read["from_offset"])
    assert crash["severity"] == "critical" and crash["where"] == where.split(" — ")[1].split(" ← ")[0]
    line = next(x for x in text.splitlines() if x.startswith(f"⚠ crash at offset {crash['offset']}: "))
    assert where in line, text


async def test_nrf_connect_sdk_fault_then_resetting_system_is_a_crash_a_reset_and_a_reboot(
    fw_agent: Agent, cortex_m_url: str
) -> None:
    conn, r, text = await _fault(fw_agent, cortex_m_url, "n")
    crash = _crash(r)
    assert crash["offset"] == _offset_of(
        r["read"]["data"], "E: ***** HARD FAULT *****", r["read"]["from_offset"]
    )
    assert " — parse_frame at app.c:26 ← radio_task at app.c:33" in text
    r2 = await fw_agent.call("read", {"connection_id": conn, "match": READY, "timeout_ms": 30_000})
    assert r2["stop_reason"] == "match", r2  # the firmware started again after SYSRESETREQ
    resets = [e for e in (r.get("events") or []) + (r2.get("events") or []) if e["kind"] == "reset"]
    assert len(resets) == 1, (r, r2)
    assert resets[0]["offset"] == _offset_of(r2["data"], "E: Resetting system", r2["from_offset"])
    status = await fw_agent.call("get_status", {"connection_id": conn})
    assert (status["events"]["crashes"], status["events"]["resets"]) == (1, 1)


async def test_a_freertos_assert_is_a_crash_with_its_file_and_line(
    fw_agent: Agent, cortex_m_url: str
) -> None:
    _, r, text = await _fault(fw_agent, cortex_m_url, "a")
    crash = _crash(r)
    assert crash["offset"] == _offset_of(r["read"]["data"], "ASSERT! Line", r["read"]["from_offset"])
    assert "where" not in crash  # no address printed: the line itself says where
    assert text.startswith(f"⚠ crash at offset {crash['offset']}: ASSERT! Line 39, file app.c"), text
