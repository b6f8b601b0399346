"""A stdio client's requests in flight are bounded: a flood waits in the pipe, not in the server.

The SDK starts a task per request and never waits; a client that wrote requests faster than it
read the answers made the server hold every one of them (90 → 490 MiB in 16 s, still rising).
"""

from __future__ import annotations

import json
import os
import select
import threading
from typing import Any

import anyio
import mcp_types as types
import pytest

from serial_mcp.mcp import stdio_pipes
from serial_mcp.mcp.in_flight import MAX_IN_FLIGHT, MAX_LISTENS, InFlight
from tests.raw_rpc import INITIALIZE, INITIALIZED, start_server


def _request(rid: int | str) -> types.JSONRPCRequest:
    return types.JSONRPCRequest(jsonrpc="2.0", id=rid, method="ping")


def _answer(rid: int | str) -> types.JSONRPCResponse:
    return types.JSONRPCResponse(jsonrpc="2.0", id=rid, result={})


def _cancel(request_id: Any) -> types.JSONRPCNotification:
    return types.JSONRPCNotification(
        jsonrpc="2.0", method="notifications/cancelled", params={"requestId": request_id}
    )


@pytest.mark.anyio
async def test_admit_waits_at_the_limit_until_an_answer_or_a_cancel_frees_a_slot() -> None:
    flight = InFlight(limit=2)
    await flight.admit(_request(1))
    await flight.admit(_request(2))
    admitted = anyio.Event()

    async def third() -> None:
        await flight.admit(_request(3))
        admitted.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(third)
        await anyio.wait_all_tasks_blocked()
        assert not admitted.is_set() and flight.count == 2  # waits: nothing answered yet
        flight.answered(_answer(1))
        with anyio.fail_after(5):
            await admitted.wait()
    assert flight.count == 2
    await flight.admit(_cancel(2))  # a cancelled request is never answered: its slot comes back
    assert flight.count == 1
    flight.answered(_answer(2))  # a late answer to it gives nothing back twice
    assert flight.count == 1


@pytest.mark.anyio
async def test_what_takes_no_slot_and_reused_ids() -> None:
    flight = InFlight(limit=10)
    await flight.admit(types.JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized"))
    await flight.admit(_cancel([1]))  # an unhashable id in a hostile cancel is ignored
    await flight.admit(_cancel(True))
    flight.answered(_answer(99))  # an answer we wrote for a line we refused ourselves
    flight.answered(types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(code=-32700, message="x")))
    assert flight.count == 0
    await flight.admit(_request("r"))
    await flight.admit(_request("r"))  # a client that reuses an id gets each slot back
    flight.answered(_answer("r"))
    assert flight.count == 1
    flight.answered(types.JSONRPCError(jsonrpc="2.0", id="r", error=types.ErrorData(code=1, message="x")))
    assert flight.count == 0


@pytest.mark.slow
def test_a_flood_of_requests_blocks_the_client_not_the_servers_memory() -> None:
    """Requests written without reading a single answer: the server stops reading its stdin (the
    client's write blocks) after about PAUSE_AT bytes and MAX_IN_FLIGHT requests, then answers
    every one of them once the client reads."""
    proc = start_server()
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write((json.dumps(INITIALIZE) + "\n" + json.dumps(INITIALIZED) + "\n").encode())
        proc.stdin.flush()
        assert b'"id":1' in proc.stdout.readline()
        pad = {"_meta": {"pad": "x" * 1000}}  # 1 KB requests: the bound is reached after ~1300 of them
        line = (json.dumps({"jsonrpc": "2.0", "id": 0, "method": "ping", "params": pad}) + "\n").encode()
        total = 8 * stdio_pipes.PAUSE_AT // len(line)  # 8 × what the server may read ahead
        fd = proc.stdin.fileno()
        os.set_blocking(fd, False)
        sent, blocked = 0, False
        rest = b""
        while sent < total and not blocked:
            batch = b"".join(line.replace(b'"id": 0', f'"id": {i}'.encode()) for i in range(sent, sent + 100))
            sent += 100
            while batch:
                try:
                    batch = batch[os.write(fd, batch) :]
                except BlockingIOError:
                    pass
                if batch:  # the pipe is full: does the server go on draining it?
                    _, writable, _ = select.select([], [fd], [], 3.0)
                    if not writable:  # no: it stopped reading (the bound); we have read no answer
                        blocked, rest = True, batch
                        break
        assert blocked, "the server read every request without answering one: nothing bounds it"
        assert sent >= MAX_IN_FLIGHT
        answered: list[int] = []
        out = proc.stdout
        reader = threading.Thread(target=lambda: answered.extend(json.loads(raw)["id"] for raw in out))
        reader.start()  # now read, and the rest of the last batch goes through
        os.set_blocking(fd, True)
        os.write(fd, rest)
        proc.stdin.close()
        reader.join(60)
        assert sorted(answered) == list(range(sent)), "every request answered once"
    finally:
        proc.kill()
        proc.wait()


def _listen(rid: int | str) -> types.JSONRPCRequest:
    return types.JSONRPCRequest(jsonrpc="2.0", id=rid, method="subscriptions/listen", params={})


@pytest.mark.anyio
async def test_listen_streams_take_no_slot_and_one_too_many_is_refused_at_once() -> None:
    flight = InFlight(limit=2, max_listens=2)
    assert await flight.admit(_listen("a")) is None and await flight.admit(_listen("b")) is None
    assert flight.count == 0 and flight.listens == 2  # open for good: they must not hold slots
    refused = await flight.admit(_listen("c"))
    assert refused is not None and refused.id == "c" and refused.error.code == -32600
    assert "subscriptions/listen" in refused.error.message
    await flight.admit(_request(1))
    await flight.admit(_request(2))  # the request slots are all there still
    await flight.admit(_cancel("a"))  # a cancelled listen stream frees its place
    assert flight.listens == 1 and await flight.admit(_listen("d")) is None


@pytest.mark.slow
def test_many_listen_streams_never_stop_the_server_reading() -> None:
    """300 subscriptions/listen then a ping: the bound on requests in flight once let 256 listen
    streams take every slot, and the server read nothing more (not the ping, not the end of input)."""
    proc = start_server()
    assert proc.stdin is not None and proc.stdout is not None
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 100 + i,
            "method": "subscriptions/listen",
            "params": {"_meta": meta, "notifications": {"resourcesUpdated": {"uris": ["serial://connections"]}}},
        }
        for i in range(300)
    ]
    lines.append({"jsonrpc": "2.0", "id": 9, "method": "ping", "params": {"_meta": meta}})
    try:
        proc.stdin.write("".join(json.dumps(line) + "\n" for line in lines).encode())
        proc.stdin.flush()
        refusals = 0
        fd, pending = proc.stdout.fileno(), b""
        while True:
            # lines from the pipe itself: select() on the buffered file would wait for the OS while
            # answers that arrived together sit unread in Python's buffer (the flake this test had)
            while b"\n" not in pending:
                ready, _, _ = select.select([fd], [], [], 20)
                assert ready, "the ping was never answered"
                chunk = os.read(fd, 1 << 16)
                assert chunk, "the server ended before answering the ping"
                pending += chunk
            line, pending = pending.split(b"\n", 1)
            answer = json.loads(line)
            if answer.get("id") == 9:
                break
            if "error" in answer:
                assert "the most this server keeps" in answer["error"]["message"], answer
                refusals += 1
        assert refusals == 300 - MAX_LISTENS
        proc.stdin.close()
        assert proc.wait(20) == 0  # and the end of input still ends it
    finally:
        proc.kill()
        proc.wait()


def _one_shot(requests: list[dict[str, Any]]) -> bytes:
    head = [INITIALIZE, INITIALIZED]
    return "".join(json.dumps(r) + "\n" for r in [*head, *requests]).encode()


@pytest.mark.slow
def test_requests_piped_in_then_end_of_input_are_all_answered() -> None:
    """`printf '...' | serial-mcp`: the client closes stdin after its last request and reads on.
    The session used to end at the end of input, and what was still in flight was answered
    "Connection closed" (here: a read that waits 1.5 s, and list_connections that raced the end)."""
    proc = start_server()
    assert proc.stdin is not None and proc.stdout is not None
    opening = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "open", "arguments": {"port": "sim://echo"}}}
    calls = [
        *(
            {"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call", "params": {"name": "list_connections", "arguments": {}}}
            for i in range(50)
        ),
        {
            "jsonrpc": "2.0",
            "id": 99,
            "method": "tools/call",
            "params": {"name": "read", "arguments": {"connection_id": "c1", "timeout_ms": 1500, "match": "never"}},
        },
    ]
    try:
        proc.stdin.write(_one_shot([opening]))
        proc.stdin.flush()
        assert [json.loads(proc.stdout.readline())["id"] for _ in range(2)] == [1, 2]
        proc.stdin.write("".join(json.dumps(c) + "\n" for c in calls).encode())
        proc.stdin.close()  # the last request is out: end of input
        answers = {json.loads(line)["id"]: json.loads(line) for line in proc.stdout}
        assert proc.wait(30) == 0
    finally:
        proc.kill()
        proc.wait()
    assert sorted(answers) == [*range(10, 60), 99], sorted(answers)
    read = answers[99]
    assert "result" in read, read  # before: {"error": {"code": -32000, "message": "Connection closed"}}
    assert read["result"]["structuredContent"]["stop_reason"] == "timeout", read


@pytest.mark.slow
def test_a_client_gone_for_good_does_not_keep_the_server_waiting() -> None:
    """Both pipes closed while a long read is in flight: nobody can take its answer, so the server
    ends now rather than when the read's 60 s are up."""
    proc = start_server()
    assert proc.stdin is not None and proc.stdout is not None
    long_read = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "read", "arguments": {"connection_id": "c1", "timeout_ms": 60000, "match": "never"}},
    }
    opening = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "open", "arguments": {"port": "sim://echo"}}}
    proc.stdin.write(_one_shot([opening]))
    proc.stdin.flush()
    for _ in range(2):
        assert proc.stdout.readline()  # the handshake's answer and the open's
    proc.stdin.write((json.dumps(long_read) + "\n").encode())
    proc.stdin.flush()
    try:
        proc.stdout.close()
        proc.stdin.close()
        assert proc.wait(30) == 0
    finally:
        proc.kill()
        proc.wait()
