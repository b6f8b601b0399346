"""A Debian cloud kernel with a busybox initramfs (getty on ttyS0) over socket://, through the real tools.

What it prints (recorded, busybox 1.35 ash, kernel 6.1 with ``quiet``): SeaBIOS clears the screen
(``ESC c ESC[?7l ESC[2J``), then ``\\r\\r\\nboard login: `` after 15–20 s under TCG; ``Password: ``; after login the
busybox banner and the prompt ``root@board:~# `` followed by ``ESC[6n`` (a cursor-position query) — after every
prompt. Nothing answers the query; ash goes on without it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.firmware import machines
from tests.firmware.agent import Agent

pytestmark = pytest.mark.anyio

LOGIN = "login: "
PASSWORD = "Password: "
PROMPT = machines.LINUX_PROMPT_SUFFIX
BOOT_MS = 120_000  # bound on a TCG boot on a busy 2-core runner (it takes ~17 s alone)
CPR_QUERY = "\x1b[6n"


async def wait_for_login(agent: Agent, url: str) -> str:
    conn = str((await agent.call("open", {"port": url}))["connection_id"])
    r = await agent.call("read", {"connection_id": conn, "match": LOGIN, "timeout_ms": BOOT_MS})
    assert r["stop_reason"] == "match", r
    return conn


async def log_in_today(agent: Agent, conn: str) -> None:
    """Today's tools, one call per half of the dialog: write the user, read to the password prompt, …"""
    await agent.call("write", {"connection_id": conn, "data": f"{machines.LINUX_USER}\n"})
    r = await agent.call("read", {"connection_id": conn, "match": PASSWORD, "timeout_ms": 10_000})
    assert r["stop_reason"] == "match", r
    await agent.call("write", {"connection_id": conn, "data": f"{machines.LINUX_PASSWORD}\n"})
    r = await agent.call("read", {"connection_id": conn, "match": PROMPT, "timeout_ms": 10_000})
    assert r["stop_reason"] == "match", r


async def test_log_in_and_run_uname_today(
    agent: Agent, linux_url: str, record_property: Callable[[str, object], None]
) -> None:
    """Issue 13 figure (c) with today's tools, two ways on one boot: write/read pairs, then transacts."""
    conn = await wait_for_login(agent, linux_url)
    to_login = (agent.calls, agent.result_bytes)  # open + the read to the login prompt
    await log_in_today(agent, conn)
    r = await agent.call(
        "transact", {"connection_id": conn, "data": "uname -a\n", "match": PROMPT, "timeout_ms": 10_000}
    )
    assert "Linux board" in r["read"]["data"] and "x86_64" in r["read"]["data"]
    with_write_read = agent.tally()

    r = await agent.call(
        "transact", {"connection_id": conn, "data": "exit\n", "match": LOGIN, "timeout_ms": 10_000}
    )
    assert r["read"]["stop_reason"] == "match"
    agent.calls, agent.result_bytes = to_login  # the second way starts at the login prompt the first reached
    for send, expect in (
        (f"{machines.LINUX_USER}\n", PASSWORD),
        (f"{machines.LINUX_PASSWORD}\n", PROMPT),
        ("uname -a\n", PROMPT),
    ):
        r = await agent.call(
            "transact", {"connection_id": conn, "data": send, "match": expect, "timeout_ms": 10_000}
        )
        assert r["read"]["stop_reason"] == "match", r
    assert "Linux board" in r["read"]["data"]
    with_transacts = agent.tally()
    tail = (
        r["read"]["data"]
        + (await agent.call("read", {"connection_id": conn, "timeout_ms": 1000, "idle_ms": 200}))["data"]
    )
    assert tail.endswith(f"root@{machines.LINUX_HOSTNAME}:~# {CPR_QUERY}"), "ash asks for the cursor position"
    record_property("issue13_c_today_write_read", with_write_read)
    record_property("issue13_c_today_transacts", with_transacts)
    print(f"issue 13 (c) today, write/read: {with_write_read}; with transacts: {with_transacts}")


def step_data(step: dict[str, Any]) -> str:
    """A step's received text, whether the step result nests its read or not."""
    read = step.get("read", step)
    return str(read.get("data", ""))


async def test_log_in_and_run_uname_in_one_dialog_call(
    agent: Agent, linux_url: str, record_property: Callable[[str, object], None]
) -> None:
    conn = await wait_for_login(agent, linux_url)
    r = await agent.call(
        "transact",
        {
            "connection_id": conn,
            "steps": [
                {"send": f"{machines.LINUX_USER}\n", "expect": PASSWORD, "timeout_ms": 10_000},
                {"send": f"{machines.LINUX_PASSWORD}\n", "expect": PROMPT, "timeout_ms": 10_000},
                {"send": "uname -a\n", "expect": PROMPT, "timeout_ms": 10_000},
            ],
        },
    )
    steps = r["steps"]
    assert len(steps) == 3
    assert "Linux board" in step_data(steps[2])
    record_property("issue13_c_target", agent.tally())
    print(f"issue 13 (c) with transact steps: {agent.tally()}")


async def test_a_read_ends_on_the_real_busybox_prompt(agent: Agent, linux_url: str) -> None:
    conn = await wait_for_login(agent, linux_url)
    await log_in_today(agent, conn)
    r = await agent.call(
        "transact",
        {
            "connection_id": conn,
            "data": "uname -a\n",
            "rx_parser": {"type": "shell_prompt"},
            "timeout_ms": 10_000,
        },
    )
    read = r["read"]
    assert read["stop_reason"] == "final", read
    assert read["frames"][-1]["parsed"]["kind"] == "prompt"
    assert read["frames"][-1]["parsed"]["prompt"].strip().endswith("#")
    raw = "".join(str(f["data"]) for f in read["frames"])
    assert "Linux board" in raw
