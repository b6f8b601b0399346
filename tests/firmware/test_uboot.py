"""Debian's U-Boot (qemu_arm64) over socket://, through the real serial-mcp tools.

What it prints (U-Boot 2023.01, recorded): banner, ``Hit any key to stop autoboot:  2 \\b\\b\\b 1 \\b\\b\\b 0``
(one step a second, no line ending until the end), then — when not stopped — a failing distro boot
(``fatal: no kernel available``, ``starting USB...``, ``scanning bus for devices...``) and the prompt ``=> ``
with no line ending and no ANSI sequences. Stopped, it prints ``=> `` at once. ``reset`` restarts the board on
the same socket.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest

from tests.firmware.agent import Agent

pytestmark = pytest.mark.anyio

AUTOBOOT = "Hit any key to stop autoboot"
BOOTED_ON = "starting USB"  # printed only when autoboot was not stopped
PROMPT = "=> "
AGENT_LATENCY_S = 3.0  # an agent thinking between open and its first read: longer than the 2 s countdown
BOOT_MS = 20_000  # bound on reaching the countdown under TCG (it takes ~0.5 s here)


async def stop_autoboot_today(agent: Agent, url: str) -> str:
    """With today's tools and a quick agent: wait for the countdown, press a key, wait for the prompt."""
    conn = (await agent.call("open", {"port": url}))["connection_id"]
    r = await agent.call("read", {"connection_id": conn, "match": AUTOBOOT, "timeout_ms": BOOT_MS})
    assert r["stop_reason"] == "match", r
    await agent.call("write", {"connection_id": conn, "data": " "})
    r = await agent.call("read", {"connection_id": conn, "match": PROMPT, "timeout_ms": 5000})
    assert r["stop_reason"] == "match", r
    assert BOOTED_ON not in r["data"], "the key stopped autoboot"
    return str(conn)


async def test_a_key_during_the_countdown_gets_the_prompt(agent: Agent, uboot_url: str) -> None:
    await stop_autoboot_today(agent, uboot_url)


async def test_version_and_printenv_through_transact(agent: Agent, uboot_url: str) -> None:
    conn = await stop_autoboot_today(agent, uboot_url)
    r = await agent.call(
        "transact", {"connection_id": conn, "data": "version\r", "match": PROMPT, "timeout_ms": 5000}
    )
    assert r["read"]["stop_reason"] == "match"
    assert "U-Boot 20" in r["read"]["data"]
    r = await agent.call(
        "transact", {"connection_id": conn, "data": "printenv\r", "match": PROMPT, "timeout_ms": 5000}
    )
    assert "bootcmd=" in r["read"]["data"] and "Environment size" in r["read"]["data"]


async def test_measure_stop_and_printenv_when_the_first_call_is_late_today(
    agent: Agent, uboot_url: str, record_property: Callable[[str, object], None]
) -> None:
    """Issue 13 figure (b) with today's tools: the countdown is over before the agent's first read, so the
    agent sees a boot it did not want, resets the board and answers the next countdown with ``respond``."""
    conn = (await agent.call("open", {"port": uboot_url}))["connection_id"]
    await anyio.sleep(AGENT_LATENCY_S)  # the agent thinking, not a wait for the device
    r = await agent.call("read", {"connection_id": conn, "match": PROMPT, "timeout_ms": BOOT_MS})
    assert BOOTED_ON in r["data"], "too late: autoboot ran"
    r = await agent.call(
        "transact",
        {
            "connection_id": conn,
            "data": "reset\r",
            "match": PROMPT,
            "timeout_ms": BOOT_MS,
            "respond": {"on": AUTOBOOT, "send": " "},
        },
    )
    assert r["read"]["stop_reason"] == "match" and BOOTED_ON not in r["read"]["data"]
    r = await agent.call(
        "transact", {"connection_id": conn, "data": "printenv\r", "match": PROMPT, "timeout_ms": 5000}
    )
    assert "bootcmd=" in r["read"]["data"]
    record_property("issue13_b_today", agent.tally())
    print(f"issue 13 (b) today: {agent.tally()}")


async def test_a_standing_responder_stops_autoboot_when_the_first_read_is_late(
    agent: Agent, uboot_url: str, record_property: Callable[[str, object], None]
) -> None:
    opened = await agent.call("open", {"port": uboot_url, "respond": [{"on": AUTOBOOT, "send": " "}]})
    conn = opened["connection_id"]
    await anyio.sleep(AGENT_LATENCY_S)
    r = await agent.call(
        "transact",
        {"connection_id": conn, "data": "printenv\r", "match": "Environment size", "timeout_ms": 5000},
    )
    assert r["read"]["stop_reason"] == "match" and "bootcmd=" in r["read"]["data"]
    tally = agent.tally()  # what the agent needed; the check below is the test's own
    everything = await agent.call(
        "read",
        {"connection_id": conn, "from": "buffer_start", "match": "Environment size", "timeout_ms": 1000},
    )
    assert AUTOBOOT in everything["data"] and BOOTED_ON not in everything["data"]
    record_property("issue13_b_target", tally)
    print(f"issue 13 (b) with a standing responder: {tally}")


async def test_a_read_ends_on_the_real_prompt_with_the_shell_prompt_parser(
    agent: Agent, uboot_url: str
) -> None:
    conn = await stop_autoboot_today(agent, uboot_url)
    r = await agent.call(
        "transact",
        {
            "connection_id": conn,
            "data": "version\r",
            "rx_parser": {"type": "shell_prompt"},
            "timeout_ms": 5000,
        },
    )
    read = r["read"]
    assert read["stop_reason"] == "final", read
    assert read["frames"] and read["frames"][-1]["parsed"]["kind"] == "prompt"
    assert read["frames"][-1]["parsed"]["prompt"].strip() == PROMPT.strip()
