"""Issue 37.8: a dialog says what happened — its steps counted as given, a wait that heard nothing
since the port opened named as such (with the likely cause), an AT preset's final ``OK`` and a step's
``expect: "OK\\r\\n"`` in agreement, and every key a step takes in the published schema."""

from __future__ import annotations

import pydantic
import pytest

from serial_mcp import Engine
from serial_mcp.engine.option_types import StepSpec
from serial_mcp.engine.options import TransactOptions
from serial_mcp.serial.fake import FakeOpener

pytestmark = pytest.mark.anyio

LOGIN: list[StepSpec] = [
    {"send": "root", "expect": "Password:", "timeout_ms": 100},  # no newline: the console waits for one
    {"send": "secret\n", "expect": "# "},
    {"send": "uname -a\n", "expect": "# "},
    {"send": "exit\n", "expect": "login:"},
]


async def test_a_dialog_that_stops_early_counts_the_steps_it_was_given() -> None:
    opener = FakeOpener()
    opener.add("dev")
    async with Engine(opener=opener) as engine:
        conn = await engine.open("dev")
        r = await conn.transact(steps=LOGIN)
        text = r.summary()
        assert text.startswith("0 of 4 steps ok; "), text
        assert r.steps_ok is False and r.steps is not None and len(r.steps) == 1


async def test_a_wait_that_heard_nothing_since_open_says_so_and_why() -> None:
    opener = FakeOpener()
    opener.add("dev")
    async with Engine(opener=opener) as engine:
        conn = await engine.open("dev")
        text = (await conn.transact(steps=LOGIN)).summary()
        assert "nothing received since the port opened" in text, text
        assert "waiting for a newline" in text, text
        with_newline = await conn.transact("AT\r", timeout_ms=50)
        assert "nothing received since the port opened" in with_newline.summary()
        assert "newline" not in with_newline.summary()  # it had one: look at the port and wiring
        read = await conn.read(timeout_ms=50)
        assert "nothing received since the port opened" in read.summary()
        assert "waiting for a command" in read.summary()


async def test_no_hint_once_the_device_has_spoken() -> None:
    opener = FakeOpener()
    device = opener.add("dev")
    async with Engine(opener=opener) as engine:
        conn = await engine.open("dev")
        device.feed(b"login: ")
        await conn.read(match="login: ", timeout_ms=2000)
        r = await conn.transact("root", timeout_ms=50)
        assert r.read.stop_reason == "timeout" and "nothing received" not in r.summary()


@pytest.mark.parametrize("expect", ["OK", "OK\r\n", "\r\nOK\r\n", "\r\nOK"])
async def test_an_at_step_whose_reply_ended_in_ok_meets_its_expect(expect: str) -> None:
    """protocol at_command: a line frame holds no line end, so ``OK\\r\\n`` is the line ``OK``
    (today: stop=final, matched false, the step failed)."""
    async with Engine() as engine:
        conn = await engine.open("sim://slow-modem", protocol="at_command")
        r = await conn.transact(
            steps=[{"send": "AT", "expect": expect}, {"send": "AT+CGMR", "expect": expect}]
        )
        assert r.steps_ok is True, r.summary()
        assert r.steps is not None and all(s.read.stop_reason == "match" for s in r.steps)


def test_every_key_a_step_takes_is_in_the_steps_schema() -> None:
    """The transact tool's input schema is made from TransactOptions (mcp/tools.py): its ``steps``."""
    schema = pydantic.TypeAdapter(TransactOptions).json_schema()
    described = schema["properties"]["steps"]["description"]
    missing = [name for name in StepSpec.__annotations__ if name not in described]
    assert not missing, f"steps accept {missing} but the schema does not say so: {described}"
