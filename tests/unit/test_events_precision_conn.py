"""Issue 38 on a live connection: what the host does is seen by the detector. A DTR/RTS reset the caller
made (``set_dtr_rts``) is a reset with its cause and no boot-loop boot (the ESP32 ROM simulator boots
on it); the boot after a lend is the lend's; a banner a device prints in answer to a write is no boot;
``until:["exception"]`` ends on a traceback whose prompt came back; get_status counts exceptions."""

from __future__ import annotations

import pytest

from serial_mcp import Engine
from serial_mcp.serial.event_text import lend_cause
from serial_mcp.serial.fake import FakeOpener

pytestmark = pytest.mark.anyio

ROM = b"ets Jun  8 2016 00:22:57"


async def test_three_resets_by_the_caller_are_resets_and_no_boot_loop() -> None:
    async with Engine() as engine:
        conn = await engine.open("sim://esp32-rom")
        await conn.read(match="app_main", timeout_ms=5000)
        for _ in range(3):  # EN low, then released: the board boots its flash again
            await conn.set_dtr_rts(dtr=False, rts=True)
            await conn.set_dtr_rts(dtr=True, rts=True)
            r = await conn.read(from_="now", until=["boot"], timeout_ms=5000)
            assert r.stop_reason == "event"
        await conn.read(match="app_main", timeout_ms=5000)
        kinds = [(e["kind"], e.get("line")) for e in conn.events() if e["kind"] != "stage"]
        assert [k for k, _ in kinds] == ["boot"] + ["reset", "boot"] * 3
        assert {line for k, line in kinds if k == "reset"} == {"DTR/RTS set by the caller"}
        status = await conn.get_status()
        assert status.events is not None
        assert (status.events["boots"], status.events["resets"], status.events["boot_loops"]) == (4, 3, 0)


async def test_a_banner_answering_a_write_is_no_boot_and_an_exception_ends_an_until_read() -> None:
    opener = FakeOpener()
    device = opener.add("/dev/fake0")
    async with Engine(opener=opener) as engine:
        conn = await engine.open("/dev/fake0")
        device.feed(b"U-Boot 2023.01 (Jun 22 2026 - 08:38:07 +0000)\r\n=> ")
        await conn.read(match="=> ", timeout_ms=3000)
        device.responder = lambda data: (  # the device answers what is written to it
            b"version\r\nU-Boot 2023.01 (Jun 22 2026 - 08:38:07 +0000)\r\n=> "
        )
        r = await conn.transact("version\r", match="=> ", timeout_ms=3000)
        assert not r.events or all(e["kind"] != "boot" for e in r.events)
        device.responder = lambda data: (
            b'1/0\r\nTraceback (most recent call last):\r\n  File "<stdin>", line 1, in <module>\r\n'
            b"ZeroDivisionError: divide by zero\r\n>>> "
        )
        r = await conn.transact("1/0\r", until=["exception"], timeout_ms=3000)
        assert r.read.stop_reason == "event"
        assert [e["kind"] for e in r.events or []] == ["exception"]
        assert r.summary().splitlines()[0].endswith("divide by zero — <stdin>:1")
        status = await conn.get_status()
        assert status.events is not None
        assert (status.events["boots"], status.events["crashes"], status.events["exceptions"]) == (1, 0, 1)


def test_a_lends_boots_are_named_after_it() -> None:
    assert lend_cause([4242, 4243]) == "lend to pid 4242, 4243" and lend_cause(None) == "lend"


async def test_the_boot_seen_after_a_lend_is_the_lends_and_no_boot_loop() -> None:
    """serial-mcp sees no line change while the port is lent: the board the simulator powers on again at
    the reopen (as a borrower's reset would leave it) boots, and that boot is the lend's."""
    async with Engine() as engine:
        conn = await engine.open("sim://esp32-rom")
        await conn.read(match="app_main", timeout_ms=5000)
        for _ in range(3):
            await conn.release(timeout_ms=600_000)
            await conn.reclaim()
            r = await conn.read(from_="now", until=["boot"], timeout_ms=5000)
            assert r.stop_reason == "event"
        kinds = [(e["kind"], e["line"]) for e in conn.events() if e["kind"] != "stage"]
        assert kinds == [("boot", ROM.decode())] + [("reset", "lend"), ("boot", ROM.decode())] * 3
        status = await conn.get_status()
        assert status.events is not None and status.events["boot_loops"] == 0
