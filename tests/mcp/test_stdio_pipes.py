"""stdio served on the event loop: pipes in and out without a worker thread per message."""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from serial_mcp.mcp import stdio_pipes
from tests.raw_rpc import INITIALIZE, server_env

pytestmark = pytest.mark.anyio


@pytest.fixture
def pipes() -> Iterator[tuple[tuple[int, int], tuple[int, int]]]:
    """(stdin read end, our write end), (stdout write end, our read end)."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    yield (in_r, in_w), (out_w, out_r)
    for fd in (in_r, in_w, out_r, out_w):
        try:
            os.close(fd)
        except OSError:
            pass


def _file(fd: int, mode: str) -> Any:
    return os.fdopen(fd, mode, buffering=0, closefd=False)


async def _lines_of(pipes: Any, data: bytes, limit: int = stdio_pipes.MAX_LINE) -> list[str]:
    """Every line the loop-served reader yields for ``data`` written to stdin, then end of input."""
    (in_r, in_w), (out_w, _) = pipes
    async with stdio_pipes.loop_stdio(_file(in_r, "rb"), _file(out_w, "wb"), limit=limit) as served:
        assert served is not None
        lines, _ = served

        async def feed() -> None:
            await anyio.to_thread.run_sync(os.write, in_w, data)
            os.close(in_w)

        got: list[str] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(feed)
            async for line in lines:
                got.append(line)
    return got


async def test_lines_of_any_length_come_through_whole(pipes: Any) -> None:
    big = "x" * (4 << 20)  # far past asyncio's 64 KiB default line limit
    data = f'{{"a": 1}}\n{big}\n\xe9-bad:'.encode() + b"\xff\n" + b"last-no-newline"
    got = await _lines_of(pipes, data)
    assert got[0] == '{"a": 1}\n'
    assert got[1] == big + "\n"
    assert got[2] == "\xe9-bad:\ufffd\n"  # bad UTF-8 is replaced, as the SDK's reader does
    assert got[3] == "last-no-newline"
    assert len(got) == 4


async def test_replies_reach_the_pipe_and_a_stalled_reader_blocks_only_the_writer(pipes: Any) -> None:
    (in_r, _), (out_w, out_r) = pipes
    async with stdio_pipes.loop_stdio(_file(in_r, "rb"), _file(out_w, "wb")) as served:
        assert served is not None
        _, writer = served
        await writer.write('{"id": 1}\n')
        await writer.flush()
        assert os.read(out_r, 100) == b'{"id": 1}\n'

        # Nobody reads: a reply larger than the pipe waits, the loop keeps running other work.
        done = anyio.Event()
        ticks = 0

        async def reply() -> None:
            await writer.write("y" * (4 << 20) + "\n")
            done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(reply)
            while ticks < 20:
                await anyio.sleep(0)
                ticks += 1
            assert not done.is_set()
            received = 0
            while received < (4 << 20) + 1:
                chunk = await anyio.to_thread.run_sync(os.read, out_r, 1 << 20)
                received += len(chunk)
        assert done.is_set()
    assert os.get_blocking(out_w) and os.get_blocking(in_r)  # O_NONBLOCK undone for whoever shares them


async def test_a_regular_file_or_tty_keeps_the_threaded_path(tmp_path: Path, pipes: Any) -> None:
    (_, _), (out_w, _) = pipes
    f = tmp_path / "requests.jsonl"
    f.write_bytes(b"{}\n")
    with f.open("rb") as stdin:
        async with stdio_pipes.loop_stdio(stdin, _file(out_w, "wb")) as served:
            assert served is None
    async with stdio_pipes.loop_stdio(io.BytesIO(b""), io.BytesIO()) as served:
        assert served is None


async def test_the_server_serves_pipes_without_wrapping_them_in_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The stdio entry point takes the loop path for pipes: ``anyio.wrap_file`` (a worker thread per
    line read and per reply written) is never reached."""
    from serial_mcp.mcp import stdio_serve

    def no_threads(*_: Any) -> Any:
        raise AssertionError("stdio over pipes went through anyio.wrap_file")

    monkeypatch.setattr(anyio, "wrap_file", no_threads)
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()

    class FakeStd:
        def __init__(self, fd: int, mode: str) -> None:
            self.buffer = os.fdopen(fd, mode, buffering=0)

    monkeypatch.setattr(sys, "stdin", FakeStd(in_r, "rb"))
    monkeypatch.setattr(sys, "stdout", FakeStd(out_w, "wb"))

    from serial_mcp.mcp.server import build_server
    from serial_mcp.serial.fake import FakeOpener
    from serial_mcp.serial.manager import ConnectionManager

    server = build_server(ConnectionManager(FakeOpener()))
    init = (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
        b'"capabilities":{},"clientInfo":{"name":"t","version":"0"}}}\n'
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_connections","arguments":{}}}\n'
    )
    out = bytearray()

    async def client() -> None:
        await anyio.to_thread.run_sync(os.write, in_w, init)
        while out.count(b"\n") < 2:  # both replies, then end of input ends the server
            out.extend(await anyio.to_thread.run_sync(os.read, out_r, 1 << 16))
        os.close(in_w)

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(client)
            await stdio_serve.run_stdio(server)
    os.close(out_w)
    assert os.read(out_r, 1 << 16) == b""  # no reply after the end, and no duplicate left open
    os.close(out_r)
    replies = bytes(out).splitlines()
    assert len(replies) == 2 and b'"id":2' in replies[1] and b"connections" in replies[1]


@pytest.mark.slow
async def test_a_request_of_megabytes_over_real_stdio_is_answered() -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "serial_mcp"], env=server_env())
    async with Client(params, read_timeout_seconds=60) as c:
        r = await c.call_tool("open", {"port": "/dev/" + "x" * (3 << 20)})
        assert r.is_error and r.structured_content["error"]["code"]  # answered, with our error shape
        assert not (await c.call_tool("list_connections", {})).is_error


@pytest.mark.slow
def test_a_client_that_closes_our_stdout_ends_the_server_cleanly() -> None:
    """Its reader gone, the server's next reply meets a broken pipe: it shuts down, exit status 0, no
    traceback and no ``unhandled errors`` line on stderr."""
    import subprocess

    proc = subprocess.Popen(
        [sys.executable, "-m", "serial_mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(),
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
    proc.stdin.flush()
    assert b'"id":1' in proc.stdout.readline()
    proc.stdout.close()
    proc.stdin.write(b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n')
    proc.stdin.flush()
    try:
        rc = proc.wait(30)  # a hang guard; it ends at the broken pipe, stdin still open
    finally:
        proc.kill()
    err = proc.stderr.read().decode()
    proc.stdin.close()
    proc.stderr.close()
    assert rc == 0, err
    assert "Traceback" not in err and "unhandled errors" not in err


async def test_a_line_over_the_limit_is_answered_by_id_and_not_buffered(pipes: Any) -> None:
    """A hostile client's endless line: its head comes through (so the reply names its request), the
    rest is skipped in pieces no larger than the limit, and the next request is read as usual."""
    from serial_mcp.mcp.line_screen import answer_for_rejected_line

    limit = 4096
    huge = b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "write", "arguments": {"data": "'
    huge += b"A" * (limit * 50) + b'"}}}\n'
    after = b'{"jsonrpc": "2.0", "id": 8, "method": "tools/list"}\n'
    got = await _lines_of(pipes, huge + after, limit)
    assert len(got) == 2
    head, nxt = got
    assert isinstance(head, stdio_pipes.OverlongLine) and len(head) <= limit and '"id": 7' in head
    assert nxt == after.decode()
    reply = answer_for_rejected_line(head)
    assert reply is not None
    dumped = reply.model_dump(by_alias=True, exclude_none=True)
    assert dumped["id"] == 7
    text = json.dumps(dumped)
    assert "longer than 4096 bytes" in text and "invalid_argument" in text  # a tool error, by its id
