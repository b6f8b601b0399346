"""The typed contract: options declared once (engine/options.py), the tools and the Python API made
from the same operation table, errors by family with the operation attached.

The first four tests are the probe bugs of issue 27: each failed on the code before the table
(a misspelt option dropped in silence, standing rules given to ``Engine.open`` never armed,
``transact(steps=…)``/``keys=`` a ``TypeError`` in the API, a step that sends nothing ignoring
``frames``)."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest
from mcp import Client

from serial_mcp import api
from serial_mcp.api import Engine, EngineConnection, SyncConnection, SyncEngine
from serial_mcp.engine.operations import OPERATIONS
from serial_mcp.engine.options import ReadWindow, wire_name
from serial_mcp.errors import (
    AccessError,
    ErrorCode,
    InvalidArgument,
    NotFound,
    PortError,
)
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager

pytestmark = pytest.mark.anyio


async def test_a_misspelt_option_is_refused_with_the_closest_name() -> None:
    async with Engine(opener=FakeOpener()) as eng:
        with pytest.raises(InvalidArgument) as caught:
            await eng.open("dev", baud_rat=9600)  # type: ignore[call-arg]
        assert "baud_rat" in caught.value.message and "did you mean 'baud_rate'" in caught.value.message
        assert eng.connections().connections == []  # nothing was opened at 115200 instead


async def test_a_wrong_type_is_refused_before_anything_happens() -> None:
    opener = FakeOpener()
    dev = opener.add("dev")
    async with Engine(opener=opener) as eng:
        conn = await eng.open("dev")
        with pytest.raises(InvalidArgument) as caught:
            await conn.transact("AT\r", match="OK", timeout_ms="fast")  # type: ignore[arg-type]
        assert "timeout_ms" in caught.value.message and "'fast'" in caught.value.message
        with pytest.raises(InvalidArgument, match="timeout_ms"):
            await conn.read(timeout_ms=True)  # a boolean is not a number of milliseconds
        assert bytes(dev.written) == b""


async def test_engine_open_arms_its_standing_rules() -> None:
    opener = FakeOpener()
    dev = opener.add("dev")
    async with Engine(opener=opener) as eng:
        conn = await eng.open("dev", respond=[{"on": "Hit any key", "send": " "}])
        dev.feed(b"Hit any key to stop autoboot: 3")
        got = await conn.read(match="autoboot", timeout_ms=3000)
        assert got.matched
        status = conn.status()
        assert status.responders and status.responders[0]["on"] == "Hit any key"


def _login(data: bytes) -> bytes | None:
    return {b"root\n": b"Password: ", b"pw\n": b"\r\n# "}.get(data)


async def test_transact_with_steps_and_keys_through_the_api() -> None:
    opener = FakeOpener()
    dev = opener.add("dev", responder=_login)
    async with Engine(opener=opener) as eng:
        conn = await eng.open("dev")
        dialog = await conn.transact(
            steps=[{"send": "root\n", "expect": "Password: "}, {"send": "pw\n", "expect": "# "}],
            timeout_ms=3000,
        )
        assert dialog.steps_ok and dialog.steps is not None and len(dialog.steps) == 2
        await conn.transact("x", keys=["ctrl-c"], timeout_ms=0)
        assert bytes(dev.written).endswith(b"x\x03")


async def test_a_step_that_sends_nothing_keeps_the_transacts_frames_view() -> None:
    opener = FakeOpener()
    dev = opener.add("dev")
    async with Engine(opener=opener) as eng:
        conn = await eng.open("dev")
        dev.feed(b"$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47\r\n")
        out = await conn.transact(
            steps=[{"expect": "GPGGA"}], protocol="nmea0183", frames="raw", timeout_ms=3000
        )
        assert out.steps and out.read is out.steps[-1].read  # the last step's (not repeated on the wire)
        frames = out.read.frames
        assert frames and all(f.parsed is None for f in frames), frames  # raw: no parsed fields


async def test_errors_come_by_family_with_the_operation_and_connection_attached() -> None:
    opener = FakeOpener()
    opener.add("dev")
    async with Engine(opener=opener, read_only=True) as eng:
        with pytest.raises(PortError) as lost:
            await eng.open("nope")
        assert lost.value.code == ErrorCode.PORT_NOT_FOUND and lost.value.operation == "open"
        conn = await eng.open("dev")
        with pytest.raises(AccessError) as refused:
            await conn.write("x")
        assert refused.value.code == ErrorCode.READ_ONLY_MODE
        assert (refused.value.operation, refused.value.connection_id) == ("write", conn.id)
        await conn.close()
        with pytest.raises(NotFound) as gone:
            await conn.get_status()
        assert gone.value.code == ErrorCode.CONNECTION_NOT_FOUND and gone.value.connection_id == conn.id


def _keywords(fn: Any) -> list[str]:
    return [p.name for p in inspect.signature(fn).parameters.values()][1:]


def test_every_tool_is_a_method_with_the_same_options() -> None:
    for op in OPERATIONS:
        options = [f.name for f in dataclasses.fields(op.options_type)]
        owner = EngineConnection if op.on_connection else Engine
        method = getattr(owner, op.name, None)
        assert method is not None, f"the {op.name} tool has no method on {owner.__name__}"
        if op.name not in api.NOT_METHODS:
            assert sorted(_keywords(method)) == sorted(options), op.name


def test_the_blocking_api_has_every_method_of_the_async_one() -> None:
    def public(cls: type) -> set[str]:
        return {n for n, v in vars(cls).items() if not n.startswith("_") and callable(v)}

    assert public(EngineConnection) <= public(SyncConnection)
    assert public(Engine) - {"connections"} <= public(SyncEngine)
    for name in public(EngineConnection):
        if name != "status":
            assert _keywords(getattr(SyncConnection, name)) == _keywords(getattr(EngineConnection, name))


async def test_each_tools_arguments_are_its_options() -> None:
    async with Client(build_server(ConnectionManager(FakeOpener()))) as c:
        listed = {t.name: t for t in (await c.list_tools()).tools}
    assert set(listed) == {op.name for op in OPERATIONS}
    for op in OPERATIONS:
        expected = {wire_name(f.name) for f in dataclasses.fields(op.options_type)}
        if op.on_connection:
            expected.add("connection_id")
        if issubclass(op.options_type, ReadWindow):  # the answer's flag, not the engine's (answers.py)
            expected.add("verbose")
        assert set(listed[op.name].input_schema.get("properties", {})) == expected, op.name


def test_sync_engine_runs_the_same_operations() -> None:
    opener = FakeOpener()
    opener.add("dev", responder=lambda data: b"OK\r\n" if data == b"AT\r" else None)
    with SyncEngine(opener=opener) as eng:
        conn = eng.open("dev")
        assert conn.transact("AT\r", match="OK", timeout_ms=3000).read.matched
        assert conn.get_status().connection_id == conn.id
        assert eng.compute_checksum("123456789", "crc32").checksum_hex == "cbf43926"
        conn.close()
