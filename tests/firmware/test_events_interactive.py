"""Issue 38, done when: an interactive U-Boot or Linux shell session raises no boot and no crash after the
first boot, though the commands typed print banner-like lines (U-Boot's ``version`` prints its banner again,
Linux's ``dmesg`` and ``/proc/version`` its ``Linux version`` line). Real firmware in QEMU, as an agent
drives it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.firmware.agent import Agent
from tests.firmware.test_linux_console import log_in_today, wait_for_login
from tests.firmware.test_uboot import PROMPT, stop_autoboot_today

pytestmark = pytest.mark.anyio


def _alarms(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in result.get("events") or [] if e["kind"] in ("boot", "crash", "boot_loop")]


async def test_u_boot_version_and_bdinfo_at_the_prompt_raise_no_boot(agent: Agent, uboot_url: str) -> None:
    conn = await stop_autoboot_today(agent, uboot_url)
    for command in ("version\r", "bdinfo\r", "version\r"):
        args = {"connection_id": conn, "data": command, "match": PROMPT, "timeout_ms": 10_000}
        r = await agent.call("transact", args)
        assert r["read"]["stop_reason"] == "match", r
        assert _alarms(r) == [], r
    assert r["read"]["data"].count("U-Boot 20") == 1  # the banner again, as an answer
    events = (await agent.call("get_status", {"connection_id": conn}))["events"]
    assert (events["boots"], events["crashes"], events["boot_loops"]) == (1, 0, 0), events


async def test_linux_dmesg_and_proc_version_at_the_shell_raise_no_boot(agent: Agent, linux_url: str) -> None:
    conn = await wait_for_login(agent, linux_url)
    await log_in_today(agent, conn)
    for command in ("dmesg | head -n 40\n", "cat /proc/version\n", "dmesg | grep -i 'linux version'\n"):
        args = {"connection_id": conn, "data": command, "match": "# ", "timeout_ms": 30_000}
        r = await agent.call("transact", args)
        assert r["read"]["stop_reason"] == "match", r
        assert _alarms(r) == [], r
    assert "Linux version" in r["read"]["data"]
    events = (await agent.call("get_status", {"connection_id": conn}))["events"]
    assert (events["boots"], events["crashes"], events["boot_loops"]) == (1, 0, 0), events
