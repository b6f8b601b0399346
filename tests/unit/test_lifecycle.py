"""Line control, capture_boot, BREAK, live settings, pacing and reconnect — over the fake opener.

The fake records every DTR/RTS/BREAK change with a timestamp and can play bytes the moment a
line changes, so boot capture is checked byte-exactly without hardware.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcp import Client

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeDevice, FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from tests.tool_calls import call
from tests.tool_calls import error as err

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
async def env() -> AsyncIterator[tuple[Client, FakeDevice]]:
    opener = FakeOpener()
    dev = opener.add("board")
    async with Client(build_server(ConnectionManager(opener))) as c:
        yield c, dev


def boots_on_release(banner: bytes, during_reset: bytes = b"") -> Any:
    """A board that prints ``during_reset`` while RTS is low and ``banner`` when RTS is raised again."""

    def on_line(dev: FakeDevice, name: str, level: bool) -> None:
        if name == "rts" and not level:
            dev.feed(during_reset)
        elif name == "rts" and level:
            dev.feed(banner)

    return on_line


async def test_capture_boot_captures_exactly_the_post_mark_bytes(env: tuple[Client, FakeDevice]) -> None:
    c, dev = env
    cid = (await call(c, "open", {"port": "board"}))["connection_id"]
    dev.feed(b"stale output from before\r\n")
    await call(c, "read", {"connection_id": cid, "from": 0, "max_bytes": 26, "timeout_ms": 5000})
    dev.on_line = boots_on_release(b"ESP-ROM:esp32\r\nboot:0x13\r\nready> ", b"\x00\xff")
    r = await call(
        c,
        "capture_boot",
        {"connection_id": cid, "reset": {"rts": False, "hold_ms": 20}, "match": "ready> ", "encoding": "hex"},
    )
    assert r["mark_offset"] == 26
    assert bytes.fromhex(r["read"]["data"]) == b"\x00\xff" + b"ESP-ROM:esp32\r\nboot:0x13\r\nready> "
    assert r["read"]["from_offset"] == 26 and r["read"]["stop_reason"] == "match"
    assert [(n, lvl) for _, n, lvl in dev.line_events] == [("rts", False), ("rts", True)]
    hold = dev.line_events[1][0] - dev.line_events[0][0]
    assert hold > 0
    status = await call(c, "get_status", {"connection_id": cid})
    assert status["cursors"]["default"]["offset"] == 0, "the shared cursor is untouched"
    assert status["rts"] is True


async def test_capture_boot_without_reset_arms_only(env: tuple[Client, FakeDevice]) -> None:
    c, dev = env
    cid = (await call(c, "open", {"port": "board"}))["connection_id"]
    dev.feed(b"old")
    await call(c, "read", {"connection_id": cid, "from": 0, "max_bytes": 3, "timeout_ms": 5000})

    async def power_cycle() -> None:
        await asyncio.sleep(0.05)
        dev.feed(b"U-Boot 2023.01\r\nHit any key to stop autoboot:  3")

    task = asyncio.create_task(power_cycle())
    r = await call(
        c,
        "capture_boot",
        {"connection_id": cid, "reset": None, "match": {"pattern": "autoboot", "mode": "glob"}},
    )
    await task
    assert r["read"]["data"].startswith("U-Boot") and r["read"]["matched"]
    assert dev.line_events == []


async def test_capture_boot_releases_the_line_when_cancelled(env: tuple[Client, FakeDevice]) -> None:
    c, dev = env
    cid = (await call(c, "open", {"port": "board"}))["connection_id"]
    with anyio.move_on_after(0.2):
        await c.call_tool("capture_boot", {"connection_id": cid, "reset": {"dtr": False, "hold_ms": 10_000}})
    async with asyncio.timeout(5):  # the shielded release runs right after the cancellation
        while dev.lines["dtr"] is not True:
            await asyncio.sleep(0.01)
    assert [(n, lvl) for _, n, lvl in dev.line_events] == [("dtr", False), ("dtr", True)]


async def test_capture_boot_releases_the_line_on_error(env: tuple[Client, FakeDevice]) -> None:
    c, dev = env
    cid = (await call(c, "open", {"port": "board"}))["connection_id"]

    def explode(d: FakeDevice, name: str, level: bool) -> None:
        if not level:
            raise OSError(5, "Input/output error")

    dev.on_line = explode
    e = await err(c, "capture_boot", {"connection_id": cid, "reset": {"rts": False, "hold_ms": 10}})
    assert e["code"]
    assert dev.lines["rts"] is True
    assert [(n, lvl) for _, n, lvl in dev.line_events] == [("rts", False), ("rts", True)]


async def test_capture_boot_arguments_are_validated(env: tuple[Client, FakeDevice]) -> None:
    c, dev = env
    cid = (await call(c, "open", {"port": "board"}))["connection_id"]
    for reset in ({"rts": "yes"}, {"hold_ms": 10}, {"rts": True, "hold_ms": 0}, {"rts": True, "hold": 5}):
        assert (await err(c, "capture_boot", {"connection_id": cid, "reset": reset}))[
            "code"
        ] == "invalid_argument"
    assert dev.line_events == []


async def test_set_dtr_rts_and_status(env: tuple[Client, FakeDevice]) -> None:
    c, dev = env
    cid = (await call(c, "open", {"port": "board"}))["connection_id"]
    r = await call(c, "set_dtr_rts", {"connection_id": cid, "dtr": False})
    assert (r["dtr"], r["rts"]) == (False, None)
    await call(c, "set_dtr_rts", {"connection_id": cid, "dtr": True, "rts": False})
    assert dev.lines["dtr"] is True and dev.lines["rts"] is False
    status = await call(c, "get_status", {"connection_id": cid})
    assert (status["dtr"], status["rts"]) == (True, False)
    assert (await err(c, "set_dtr_rts", {"connection_id": cid}))["code"] == "invalid_argument"


async def test_send_break_reports_progress_and_releases(env: tuple[Client, FakeDevice]) -> None:
    c, dev = env
    cid = (await call(c, "open", {"port": "board"}))["connection_id"]
    seen: list[float] = []

    async def progress(p: float, total: float | None, message: str | None) -> None:
        seen.append(p)

    r = await call(c, "send_break", {"connection_id": cid, "duration_ms": 300}, progress_callback=progress)
    assert r["duration_ms"] == 300
    assert [(n, lvl) for _, n, lvl in dev.line_events] == [("break", True), ("break", False)]
    assert seen and seen[-1] == 3
    with anyio.move_on_after(0.2):
        await c.call_tool("send_break", {"connection_id": cid, "duration_ms": 60_000})
    async with asyncio.timeout(5):
        while dev.lines["break"]:
            await asyncio.sleep(0.01)
    assert dev.line_events[-1][1:] == ("break", False)


async def test_reconfigure_is_validated_then_applied_live(env: tuple[Client, FakeDevice]) -> None:
    c, dev = env
    cid = (await call(c, "open", {"port": "board"}))["connection_id"]
    before = len(dev.settings_history)
    assert (await err(c, "reconfigure", {"connection_id": cid, "baud_rate": -5}))[
        "code"
    ] == "invalid_argument"
    assert (await err(c, "reconfigure", {"connection_id": cid, "parity": "sideways"}))[
        "code"
    ] == "invalid_argument"
    assert len(dev.settings_history) == before, "nothing touched the port"
    r = await call(c, "reconfigure", {"connection_id": cid, "baud_rate": 9600, "parity": "even"})
    assert r["settings"]["baud_rate"] == 9600 and r["previous"]["baud_rate"] == 115200
    assert dev.settings_history[-1].baud_rate == 9600 and dev.settings_history[-1].parity == "even"
    r = await call(c, "set_flow_control", {"connection_id": cid, "flow_control": "hardware"})
    assert r["settings"]["flow_control"] == "hardware" and dev.settings_history[-1].baud_rate == 9600


async def test_paced_write_goes_out_line_by_line(env: tuple[Client, FakeDevice]) -> None:
    c, dev = env
    cid = (await call(c, "open", {"port": "board", "pace": {"inter_line_ms": 5}}))["connection_id"]
    await call(c, "write", {"connection_id": cid, "data": "a=1\r\nb=2\r\nc"})
    assert dev.writes == [b"a=1\r\n", b"b=2\r\n", b"c"]
    dev.writes.clear()
    await call(c, "write", {"connection_id": cid, "data": "xyz", "pace": {"inter_byte_us": 100}})
    assert dev.writes == [b"x", b"y", b"z"]
    assert (await err(c, "write", {"connection_id": cid, "data": "x", "pace": {"per_byte": 1}}))[
        "code"
    ] == "invalid_argument"


async def test_concurrent_writes_are_serialized_in_arrival_order(env: tuple[Client, FakeDevice]) -> None:
    c, dev = env
    cid = (await call(c, "open", {"port": "board", "pace": {"inter_byte_us": 50}}))["connection_id"]
    payloads = [f"<{i:02d}:" + "x" * 10 + ">" for i in range(12)]
    async with anyio.create_task_group() as tg:
        for p in payloads:
            tg.start_soon(call, c, "write", {"connection_id": cid, "data": p})
            await asyncio.sleep(0)  # issue them in order
    assert bytes(dev.written).decode() == "".join(payloads)


async def test_reconnect_keeps_offsets_and_honours_read_timeouts(env: tuple[Client, FakeDevice]) -> None:
    c, dev = env
    policy = {"initial_delay_ms": 10, "max_delay_ms": 20, "max_attempts": 0}
    cid = (await call(c, "open", {"port": "board", "reconnect": policy}))["connection_id"]
    dev.feed(b"before|")
    assert (await call(c, "read", {"connection_id": cid, "match": "|", "timeout_ms": 5000}))[
        "next_offset"
    ] == 7
    dev.unplug()
    r = await call(c, "read", {"connection_id": cid, "timeout_ms": 300, "match": "never"})
    assert r["stop_reason"] == "timeout" and r["state"] == "reconnecting"
    status = await call(c, "get_status", {"connection_id": cid})
    assert status["state"] == "reconnecting" and status["reconnect_attempts"] >= 1 and status["last_error"]
    dev.plug_in()
    dev.feed(b"after")
    r = await call(c, "read", {"connection_id": cid, "match": "after", "timeout_ms": 5000})
    assert r["data"] == "after" and r["from_offset"] == 7 and r["next_offset"] == 12
    status = await call(c, "get_status", {"connection_id": cid})
    assert status["state"] == "open" and status["reconnects"] == 1 and dev.opens == 2


async def test_reconnect_gives_up_after_max_attempts_then_manual_reconnect(
    env: tuple[Client, FakeDevice],
) -> None:
    c, dev = env
    cid = (
        await call(
            c,
            "open",
            {"port": "board", "reconnect": {"initial_delay_ms": 5, "max_delay_ms": 5, "max_attempts": 3}},
        )
    )["connection_id"]
    dev.unplug()
    r = await call(c, "read", {"connection_id": cid, "timeout_ms": 60_000, "match": "never"})
    assert r["stop_reason"] == "disconnected", (
        "the waiting read ends when the policy gives up, not at its timeout"
    )
    status = await call(c, "get_status", {"connection_id": cid})
    assert status["state"] == "disconnected" and status["reconnect_attempts"] == 3
    assert "gave up" in status["last_error"]
    assert (await err(c, "reconnect", {"connection_id": cid}))["code"] == "port_not_found"
    dev.plug_in()
    r2 = await call(c, "reconnect", {"connection_id": cid})
    assert r2["state"] == "open"
    assert (await call(c, "write", {"connection_id": cid, "data": "hi"}))["bytes_written"] == 2


async def test_unplug_without_policy_other_connections_unaffected() -> None:
    opener = FakeOpener()
    a, b = opener.add("a"), opener.add("b")
    async with Client(build_server(ConnectionManager(opener))) as c:
        ca = (await call(c, "open", {"port": "a"}))["connection_id"]
        cb = (await call(c, "open", {"port": "b"}))["connection_id"]
        a.unplug()
        assert (await call(c, "read", {"connection_id": ca, "timeout_ms": 60_000, "match": "x"}))[
            "stop_reason"
        ] == "disconnected"
        b.feed(b"still fine")
        assert (await call(c, "read", {"connection_id": cb, "match": "fine", "timeout_ms": 5000}))["matched"]


async def test_event_log_records_everything_in_order(env: tuple[Client, FakeDevice]) -> None:
    c, dev = env
    dev.responder = lambda data: b"\r\nOK\r\n" if data == b"AT\r" else None
    cid = (await call(c, "open", {"port": "board"}))["connection_id"]
    await call(c, "transact", {"connection_id": cid, "data": "AT\r", "match": "OK\r\n"})
    await call(c, "set_dtr_rts", {"connection_id": cid, "dtr": False})
    await call(c, "send_break", {"connection_id": cid, "duration_ms": 10})
    await call(c, "reconfigure", {"connection_id": cid, "baud_rate": 9600})
    log = await call(c, "get_log", {"connection_id": cid})
    kinds = [e["type"] for e in log["events"]]
    assert kinds == ["open", "tx", "rx", "control", "break", "config"]
    tx, rx = log["events"][1], log["events"][2]
    assert tx["data"] == "AT\r" and rx["data"] == "\r\nOK\r\n" and rx["offset"] == 0
    seqs = [e["seq"] for e in log["events"]]
    assert seqs == sorted(seqs)
    newer = await call(c, "get_log", {"connection_id": cid, "since": seqs[2], "payloads": False})
    assert [e["type"] for e in newer["events"]] == ["control", "break", "config"]
    assert "data" not in newer["events"][0]
    cleared = await call(c, "clear_log", {"connection_id": cid})
    assert cleared["events_cleared"] == 6
    assert (await call(c, "get_log", {"connection_id": cid}))["events"] == []


async def test_log_marks_rx_bytes_the_ring_dropped() -> None:
    opener = FakeOpener()
    dev = opener.add("small")
    async with Client(build_server(ConnectionManager(opener))) as c:
        cid = (await call(c, "open", {"port": "small", "rx_buffer_size": 1024}))["connection_id"]
        dev.feed(b"a" * 800)
        await call(c, "read", {"connection_id": cid, "from": 0, "max_bytes": 800, "timeout_ms": 5000})
        dev.feed(b"b" * 800)
        await call(c, "read", {"connection_id": cid, "from": 800, "max_bytes": 800, "timeout_ms": 5000})
        log = await call(c, "get_log", {"connection_id": cid})
        rx = [e for e in log["events"] if e["type"] == "rx"]
        assert rx[0].get("lost") is True and "data" not in rx[0]
        assert rx[-1]["data"].endswith("b" * 10)
