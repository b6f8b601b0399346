"""Issue 24, must hold: real crashes and resets from real software, detected on a live connection once each,
with the right kind and offset, and surfaced as an agent sees them (the result's first text lines, its
structured ``events``, ``read(until=[...])``, get_status).

- Linux (Debian's kernel, busybox initramfs, QEMU): ``echo c > /proc/sysrq-trigger`` panics the kernel.
- U-Boot (Debian's qemu_arm64 build): the ``reset`` command announces ``resetting ...`` and boots again.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.firmware import machines
from tests.firmware.agent import Agent
from tests.firmware.test_linux_console import BOOT_MS, log_in_today, wait_for_login
from tests.firmware.test_uboot import stop_autoboot_today

pytestmark = pytest.mark.anyio


def _offset_of(data: str, needle: str, start: int) -> int:
    """The stream offset of the line holding ``needle`` in ``data`` (read from offset ``start``)."""
    raw = data.encode()
    at = raw.index(needle.encode())
    line = max(raw.rfind(b"\n", 0, at), raw.rfind(b"\r", 0, at)) + 1
    return start + line


def _of(result: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e for e in result.get("events") or [] if e["kind"] == kind]


async def test_a_linux_kernel_panic_is_one_crash_event_at_its_first_line(
    agent: Agent, linux_url: str
) -> None:
    conn = await wait_for_login(agent, linux_url)
    await log_in_today(agent, conn)
    status = await agent.call("get_status", {"connection_id": conn})
    assert status["events"]["crashes"] == 0 and status["events"]["boots"] >= 1
    args = {
        "connection_id": conn,
        "data": "echo c > /proc/sysrq-trigger\n",
        "until": ["crash"],
        "timeout_ms": 60_000,
    }
    failed, r, text = await agent.raw("transact", args)
    assert not failed and r is not None, text
    read = r["read"]
    crashes = _of(r, "crash")
    assert len(crashes) == 1, r
    crash = crashes[0]
    assert crash["offset"] == _offset_of(read["data"], "Kernel panic - not syncing", read["from_offset"])
    assert crash["reason"] == "sysrq triggered crash" and crash["severity"] == "critical"
    assert read["stop_reason"] in ("event", "disconnected")
    assert text.startswith(f"⚠ crash at offset {crash['offset']}: ")
    status = await agent.call("get_status", {"connection_id": conn})
    assert status["events"]["crashes"] == 1


async def test_a_u_boot_reset_is_one_reset_event_then_a_boot(agent: Agent, uboot_url: str) -> None:
    conn = await stop_autoboot_today(agent, uboot_url)
    first = await agent.call("get_status", {"connection_id": conn})
    assert first["events"]["boots"] == 1 and first["events"].get("resets", 0) == 0
    r = await agent.call(
        "transact",
        {
            "connection_id": conn,
            "data": "reset\r",
            "until": ["boot"],
            "timeout_ms": BOOT_MS,
            "match": "U-Boot 20",
        },
    )
    read = r["read"]
    resets = _of(r, "reset")
    assert len(resets) == 1, r
    assert resets[0]["offset"] == _offset_of(read["data"], "resetting ...", read["from_offset"])
    boots = [e for e in r.get("events") or [] if e["kind"] == "boot"]
    r2 = await agent.call("read", {"connection_id": conn, "until": ["boot"], "timeout_ms": BOOT_MS})
    boots += _of(r2, "boot")
    assert len(boots) == 1, (r, r2)
    status = await agent.call("get_status", {"connection_id": conn})
    assert (status["events"]["boots"], status["events"]["resets"]) == (2, 1)
    assert machines.LINUX_USER  # the machines module is the one the fixtures use
