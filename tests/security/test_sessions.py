"""Several agents on one HTTP server: each session has its own default cursor, connections belong to
the session that opened them, reads on one cursor never duplicate bytes, and a session that goes away
takes its running calls and their responders with it."""

from __future__ import annotations

import anyio
import pytest

from tests.security.http_harness import http_server
from tests.tool_calls import call, error

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_another_session_cannot_consume_a_reply_or_close_the_connection() -> None:
    async with http_server() as srv, srv.session() as a, srv.session() as b:
        cid = (await call(a, "open", {"port": "dev"}))["connection_id"]
        listed = await call(b, "list_connections", {})
        assert [c["connection_id"] for c in listed["connections"]] == [cid]  # B may see it
        srv.device.feed(b"reply for A\n")
        # B reads "its" default cursor: it gets the bytes too (reading is allowed) but does not
        # consume A's: A still reads the whole reply afterwards.
        got_b = await call(b, "read", {"connection_id": cid, "match": "\n", "timeout_ms": 5000})
        assert got_b["data"] == "reply for A\n"
        got_a = await call(a, "read", {"connection_id": cid, "match": "\n", "timeout_ms": 5000})
        assert got_a["data"] == "reply for A\n"
        for tool, args in [
            ("close", {"connection_id": cid}),
            ("write", {"connection_id": cid, "data": "x"}),
            ("transact", {"connection_id": cid, "data": "x"}),
            ("set_dtr_rts", {"connection_id": cid, "dtr": False}),
            ("reconfigure", {"connection_id": cid, "baud_rate": 9600}),
            ("flush", {"connection_id": cid}),
        ]:
            assert (await error(b, tool, args))["code"] == "not_owner", tool
        assert bytes(srv.device.written) == b"" and srv.device.line_events == []
        assert len(srv.manager.list()) == 1
        status = await call(b, "get_status", {"connection_id": cid})
        assert set(status["cursors"]) == {"default"}  # B sees its own default, not A's
        await call(a, "close", {"connection_id": cid})


async def test_share_write_lets_other_sessions_write_and_close() -> None:
    async with http_server() as srv, srv.session() as a, srv.session() as b:
        cid = (await call(a, "open", {"port": "dev", "share": "write"}))["connection_id"]
        await call(b, "write", {"connection_id": cid, "data": "from B"})
        assert bytes(srv.device.written) == b"from B"
        await call(b, "close", {"connection_id": cid})
        assert srv.manager.list() == []


async def test_bad_share_value_is_refused_before_opening() -> None:
    async with http_server() as srv, srv.session() as a:
        e = await error(a, "open", {"port": "dev", "share": "everyone"})
        assert e["code"] == "invalid_argument"
        assert srv.manager.list() == []


async def test_parallel_reads_on_one_cursor_never_duplicate_bytes() -> None:
    async with http_server() as srv, srv.session() as a:
        cid = (await call(a, "open", {"port": "dev"}))["connection_id"]
        payload = bytes(range(256)) * 4  # 1,024 bytes
        got: list[str] = []
        busy: list[str] = []

        async def reader() -> None:
            args = {"connection_id": cid, "cursor": "shared", "encoding": "hex", "timeout_ms": 2000, "idle_ms": 200}
            r = await a.call_tool("read", args)
            assert r.structured_content is not None
            if r.is_error:  # a reader that waited its whole timeout for the cursor is told so
                busy.append(r.structured_content["error"]["code"])
            else:
                got.append(r.structured_content["data"])

        async with anyio.create_task_group() as tg:
            for _ in range(20):
                tg.start_soon(reader)
            await anyio.sleep(0.2)
            srv.device.feed(payload)
        assert "".join(got) == payload.hex()  # every byte once, in order: no duplicate, no loss
        assert set(busy) <= {"cursor_busy"}


async def test_a_session_that_goes_away_ends_its_calls_and_disarms_their_responders() -> None:
    async with http_server() as srv, srv.session() as owner:
        cid = (await call(owner, "open", {"port": "dev", "share": "write"}))["connection_id"]
        started = anyio.Event()

        async def long_read(c: object) -> None:
            started.set()
            await c.call_tool(  # type: ignore[attr-defined]
                "read",
                {
                    "connection_id": cid,
                    "match": "never",
                    "timeout_ms": 600_000,
                    "respond": {"on": "login:", "send": "EVIL\r"},
                },
            )

        with anyio.move_on_after(30):
            async with srv.session() as leaving, anyio.create_task_group() as tg:
                tg.start_soon(long_read, leaving)
                await started.wait()
                with anyio.fail_after(10):
                    while not any(c.responders for c in srv.manager.list()):
                        await anyio.sleep(0.02)
                tg.cancel_scope.cancel()  # the agent drops: its session is torn down
        with anyio.fail_after(10):  # the server ends the call and disarms its responder
            while any(c.responders for c in srv.manager.list()):
                await anyio.sleep(0.02)
        srv.device.feed(b"login: ")
        await call(owner, "read", {"connection_id": cid, "match": "login:", "timeout_ms": 5000})
        assert bytes(srv.device.written) == b""


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
async def test_a_dropped_http_stream_ends_its_call_and_disarms_its_responder(era: str) -> None:
    """The client closes the TCP connection of one tools/call (no cancel notification, no DELETE):
    the server notices, ends that call, and its respond rule never writes."""
    import httpx2

    from tests.security.http_harness import TOKEN

    async with http_server() as srv, srv.session() as owner:
        cid = (await call(owner, "open", {"port": "dev", "share": "write"}))["connection_id"]
        base = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream"}
        args = {"connection_id": cid, "match": "never", "timeout_ms": 600_000,
                "respond": {"on": "login:", "send": "EVIL\r"}}
        async with httpx2.AsyncClient(headers=base, timeout=30) as http:
            if era == "2025-11-25":
                init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                        "params": {"protocolVersion": era, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
                r = await http.post(srv.url, json=init)
                headers = {"mcp-session-id": r.headers["mcp-session-id"], "mcp-protocol-version": era}
                await http.post(srv.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
                params: dict[str, object] = {"name": "read", "arguments": args}
            else:
                headers = {"mcp-protocol-version": era, "mcp-method": "tools/call", "mcp-name": "read"}
                meta = {"io.modelcontextprotocol/protocolVersion": era, "io.modelcontextprotocol/clientCapabilities": {}}
                params = {"name": "read", "arguments": args, "_meta": meta}
            body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
            async with http.stream("POST", srv.url, json=body, headers=headers):
                with anyio.fail_after(10):
                    while not any(c.responders for c in srv.manager.list()):
                        await anyio.sleep(0.02)
            # leaving the block closed the stream: the client is gone
        with anyio.fail_after(10):
            while any(c.responders for c in srv.manager.list()):
                await anyio.sleep(0.02)
        srv.device.feed(b"login: ")
        await call(owner, "read", {"connection_id": cid, "match": "login:", "timeout_ms": 5000})
        assert bytes(srv.device.written) == b""
