"""Issue 41.2: the engine fills every field of a result; what an answer leaves out (lean results,
``verbose``) is the front doors' one result layer (``serial_mcp.answers``); one transact's path
through the package stays short."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import serial_mcp
from serial_mcp.answers import structured, text
from serial_mcp.engine.results import Frame, ReadResult, TransactResult, WriteResult

pytestmark = pytest.mark.anyio

NMEA = b"$GPGGA,1*4B\r\n"


async def test_the_python_api_gives_each_frame_its_arrival_time_without_asking() -> None:
    async with serial_mcp.Engine() as eng:
        conn = await eng.open("loop://", protocol="nmea0183")
        reply = await conn.transact(NMEA.decode(), timeout_ms=2000, max_frames=1)
        assert reply.read.frames and reply.read.frames[0].t is not None, reply.read
        await conn.close()


def test_a_lean_answer_leaves_frame_times_out_and_verbose_keeps_every_field() -> None:
    read = ReadResult(
        stop_reason="match",
        from_offset=0,
        next_offset=5,
        match_index=0,
        frames=[Frame(data="ab", offset=0, t=1.5)],
    )
    result = TransactResult(write=WriteResult(connection_id="c1", bytes_written=3, tx_bytes=3), read=read)
    lean = structured(result)
    assert (
        "t" not in lean["read"]["frames"][0] and "mark_offset" not in lean and "tx_bytes" not in lean["write"]
    )
    full = structured(result, verbose=True)
    assert (
        full["read"]["frames"][0]["t"] == 1.5 and full["mark_offset"] == 0 and full["write"]["tx_bytes"] == 3
    )
    assert TransactResult.model_validate(lean).read.matched  # the lean form reads back as the result
    assert text(result) == result.summary() and text(Frame(data="", offset=0)) is None


def test_verbose_is_the_tools_answer_flag_not_an_engine_option() -> None:
    """The engine ignores ``verbose``: its read options lack it (the Python API refuses it), and the
    tools of a read take it for the answer layer, described once, on ``read``."""
    from serial_mcp.engine import operations as ops
    from serial_mcp.engine.options import ReadOptions, names
    from serial_mcp.mcp.tools import signature

    assert "verbose" not in names(ReadOptions)
    for op in (ops.READ, ops.TRANSACT, ops.CAPTURE_BOOT):
        param = signature(op).parameters["verbose"]
        assert param.default is False and (op is ops.READ) == ("every field" in str(param.annotation))
    assert "verbose" not in signature(ops.WRITE).parameters


async def test_one_transact_touches_few_files() -> None:
    """Counted with a profile hook over one warm transact on ``loop://`` through the Python API (the
    calling thread); ``bench/count_transact_files.py --list`` names them (and the pump thread's).
    33 before issue 41.2, 31 before the read modules and the dialog were folded; a reply not in yet
    when the read first looks adds ``serial/pump.py`` (the wait wakes a lingering pump)."""
    package = str(Path(serial_mcp.__file__).resolve().parent)
    files: set[str] = set()

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        if frame.f_code.co_filename.startswith(package):
            files.add(frame.f_code.co_filename)

    async with serial_mcp.Engine() as eng:
        conn = await eng.open("loop://")
        for _ in range(3):  # warm: what a first call sets up once is not the path
            await conn.transact("AT\r", match="AT", timeout_ms=2000)
        threading.setprofile(hook)
        sys.setprofile(hook)
        try:
            await conn.transact("AT\r", match="AT", timeout_ms=2000)
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
        await conn.close()
    names = sorted(f[len(package) + 1 :] for f in files)
    assert "engine/shaping.py" not in names
    assert len(names) <= 27, " ".join(names)
