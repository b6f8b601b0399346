"""Malformed requests get an answer, and the server keeps serving.

Lone surrogates (``"\\ud800"``: valid JSON, not text) and absurd nesting used to be dropped
without any reply over stdio. Each case is sent as a raw line to a real ``serial-mcp``
subprocess; the answer must come back (bounds are generous) and ``tools/list`` must still work.
"""

from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client

from serial_mcp.mcp.argument_guard import MAX_DEPTH, find_unsafe
from serial_mcp.mcp.line_screen import answer_for_rejected_line, envelope, parse_line
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from tests.raw_rpc import INITIALIZE_PARAMS, INITIALIZED, server_env
from tests.security.http_harness import TOKEN, http_server
from tests.tool_calls import error

BOUND_S = 15  # generous: an answer takes milliseconds; before the fix there was none at all


class StdioServer:
    """A ``serial-mcp`` subprocess spoken to in raw newline-delimited JSON-RPC."""

    def __init__(self) -> None:
        env = server_env()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "serial_mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.next_id = 1000
        self.pending = b""  # stdout bytes read but not yet a whole line

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        """The next stdout line, waiting at most BOUND_S for it."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.pending:  # from the pipe itself, not a buffer select() cannot see
            ready, _, _ = select.select([fd], [], [], BOUND_S)
            assert ready, f"no answer within {BOUND_S} s"
            chunk = os.read(fd, 1 << 16)
            assert chunk, f"the server exited (rc={self.proc.poll()})"
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        message: dict[str, Any] = json.loads(line)
        return message

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            body["params"] = params
        self.send(json.dumps(body))
        answer = self.receive()
        assert answer["id"] == self.next_id
        return answer

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(BOUND_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def stdio() -> Iterator[StdioServer]:
    srv = StdioServer()
    assert "result" in srv.request("initialize", INITIALIZE_PARAMS)
    srv.send(json.dumps(INITIALIZED))
    yield srv
    srv.close()


def _call(rid: int, tool: str, arguments: str) -> str:
    """A tools/call line with ``arguments`` spliced in as raw JSON text."""
    return (
        f'{{"jsonrpc":"2.0","id":{rid},"method":"tools/call",'
        f'"params":{{"name":"{tool}","arguments":{arguments}}}}}'
    )


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


CASES = {
    "write.data": ("write", r'{"connection_id":"c1","data":"\ud800"}', "lone surrogate"),
    "open.port": ("open", r'{"port":"\udc80"}', "lone surrogate"),
    "read.cursor": ("read", r'{"connection_id":"c1","cursor":"\ud800"}', "lone surrogate"),
    "read.match": ("read", r'{"connection_id":"c1","match":{"pattern":"\udc80"}}', "lone surrogate"),
    "compute_checksum.data": ("compute_checksum", r'{"data":"\ud800"}', "lone surrogate"),
    "surrogate key": ("write", r'{"connection_id":"c1","\ud800":"x"}', "lone surrogate"),
    "nested 100": ("write", '{"connection_id":"c1","data":' + _nested(100) + "}", "nested deeper"),
    "nested 5000": ("write", '{"connection_id":"c1","data":' + _nested(5000) + "}", "nested deeper"),
    "nested 100000": ("write", '{"connection_id":"c1","data":' + _nested(100_000) + "}", "nested deeper"),
    "nested objects": (
        "write",
        '{"connection_id":"c1","data":' + '{"a":' * 5000 + "1" + "}" * 5000 + "}",
        "nested deeper",
    ),
}


@pytest.mark.stdio
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.slow
def test_stdio_answers_every_malformed_call(stdio: StdioServer, case: str) -> None:
    tool, arguments, says = CASES[case]
    stdio.next_id += 1
    rid = stdio.next_id
    stdio.send(_call(rid, tool, arguments))
    answer = stdio.receive()
    assert answer["id"] == rid
    err = answer["result"]["structuredContent"]["error"]
    assert answer["result"]["isError"] is True
    assert err["code"] == "invalid_argument" and says in err["message"]
    assert "\\ud800" in json.dumps(err) or "\\udc80" in json.dumps(err) or says == "nested deeper"
    # ... and the server keeps serving
    assert stdio.request("tools/list")["result"]["tools"]


@pytest.mark.stdio
def test_stdio_answers_a_malformed_non_tool_request_and_bad_json(stdio: StdioServer) -> None:
    stdio.send(r'{"jsonrpc":"2.0","id":77,"method":"resources/read","params":{"uri":"\ud800"}}')
    answer = stdio.receive()
    assert answer["id"] == 77 and answer["error"]["code"] == -32602
    stdio.send('{"jsonrpc":"2.0","id":78,"method":"tools/list"')  # truncated: not JSON
    answer = stdio.receive()
    assert answer["id"] == 78 and answer["error"]["code"] == -32700
    stdio.send("")  # a blank line is not a request: nothing to answer
    stdio.send(r'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"\ud800"}}')
    assert stdio.request("tools/list")["result"]["tools"]  # the next answer is this one


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"connection_id": "c1", "data": "\ud800"}, "lone surrogate"),
        ({"connection_id": "c1", "data": "ok", "encoding": "\udc80x"}, "lone surrogate"),
        ({"connection_id": "c1", "data": json.loads(_nested(MAX_DEPTH + 5))}, "nested deeper"),
    ],
)
async def test_guard_covers_in_process_calls(arguments: dict[str, Any], says: str) -> None:
    """The middleware stands on every transport (pydantic-core never lets these reach it on stdio)."""
    opener = FakeOpener()
    opener.add("fake0")
    async with Client(build_server(ConnectionManager(opener))) as c:
        with anyio.fail_after(BOUND_S):
            err = await error(c, "write", arguments)
            assert err["code"] == "invalid_argument" and says in err["message"]
            assert (await c.list_tools()).tools


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
@pytest.mark.slow
async def test_http_answers_malformed_calls(era: str) -> None:
    base = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream"}
    async with http_server() as srv, httpx2.AsyncClient(headers=base, timeout=BOUND_S) as http:
        if era == "2025-11-25":
            init = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": era,
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
            r = await http.post(srv.url, json=init)
            headers = {"mcp-session-id": r.headers["mcp-session-id"], "mcp-protocol-version": era}
            await http.post(
                srv.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
            )
            meta = ""
        else:
            headers = {"mcp-protocol-version": era, "mcp-method": "tools/call", "mcp-name": "write"}
            meta = (
                f',"_meta":{{"io.modelcontextprotocol/protocolVersion":"{era}",'
                '"io.modelcontextprotocol/clientCapabilities":{}}'
            )
        headers["content-type"] = "application/json"
        for i, arguments in enumerate(
            [r'{"connection_id":"c1","data":"\ud800"}', '{"connection_id":"c1","data":' + _nested(300) + "}"]
        ):
            body = (
                f'{{"jsonrpc":"2.0","id":{10 + i},"method":"tools/call",'
                f'"params":{{"name":"write","arguments":{arguments}{meta}}}}}'
            )
            with anyio.fail_after(BOUND_S):
                r = await http.post(srv.url, content=body.encode(), headers=headers)
            # the SDK's own parser answers 400 with a JSON-RPC error; what it lets through, the guard refuses
            assert r.status_code in (200, 400), r.text
            assert ("invalid_argument" in r.text) if r.status_code == 200 else ('"error"' in r.text), r.text


def test_envelope_finds_id_method_and_tool_in_any_key_order() -> None:
    line = r'{"params":{"arguments":{"id":9,"name":"x"},"name":"write"},"method":"tools/call","id":"r1"}'
    env = envelope(line)
    assert env[("id",)] == "r1" and env[("method",)] == "tools/call" and env[("params", "name")] == "write"
    deep = (
        '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"w","arguments":'
        + _nested(10**5)
        + "}}"
    )
    assert envelope(deep)[("id",)] == 5


def test_rejected_line_replies() -> None:
    assert answer_for_rejected_line("   \n") is None
    bad = answer_for_rejected_line("{nope")
    assert bad is not None and bad.model_dump()["id"] is None  # JSON-RPC: unknown id is null
    assert find_unsafe({"a": [{"b": "\udfff"}]}, "argument {path}") == (
        "argument a[0].b holds a lone surrogate (\\udfff), which is not text; send valid Unicode, "
        "or bytes with encoding 'hex' or 'base64'."
    )
    assert find_unsafe({"a": ["ok", "\U0001f600"]}, "{path}") is None  # a real pair is fine


# A request whose id is not a string or an integer: the SDK's parser reads it as a notification
# (it ignores the id member), so without the screens it was never answered: 202 over HTTP
# (2025-11-25 era), nothing at all over stdio.
BAD_IDS = {
    "true": ("true", "a boolean"),
    "false": ("false", "a boolean"),
    "float": ("1.5", "a float"),
    "integral float": ("1.0", "a float"),
    "exponent": ("1e3", "a float"),
    "null": ("null", "null"),
    "array": ("[1]", "an array"),
    "object": ('{"n":1}', "an object"),
}


def _bad_id_line(raw_id: str, method: str = "tools/call", params: str = "") -> str:
    params = params or '{"name":"list_ports","arguments":{}}'
    return f'{{"jsonrpc":"2.0","id":{raw_id},"method":"{method}","params":{params}}}'


def _is_bad_id_refusal(answer: dict[str, Any], says: str) -> bool:
    err = answer.get("error") or {}
    return (
        answer.get("id", "absent") is None
        and err.get("code") == -32600
        and "the request's id is" in err.get("message", "")
        and says in err["message"]
    )


@pytest.mark.parametrize("case", list(BAD_IDS))
def test_a_request_with_a_bad_id_is_refused_not_taken_for_a_notification(case: str) -> None:
    raw_id, says = BAD_IDS[case]
    for line in (
        _bad_id_line(raw_id),
        _bad_id_line(raw_id, "ping", "{}"),
        _bad_id_line(raw_id, "tools/call", '{"name":"write","arguments":' + _nested(MAX_DEPTH + 20) + "}"),
    ):
        assert parse_line(line) is None, line  # not handed to the SDK as a notification
        reply = answer_for_rejected_line(line)
        assert reply is not None, line
        assert _is_bad_id_refusal(reply.model_dump(mode="json", by_alias=True), says), reply
    # what stays as it was: a notification has no id member; a good id is a request
    notification = parse_line('{"jsonrpc":"2.0","method":"notifications/initialized"}')
    assert notification is not None and not hasattr(notification, "id")
    request = parse_line('{"jsonrpc":"2.0","id":"r1","method":"ping"}')
    assert request is not None and getattr(request, "id", None) == "r1"


@pytest.mark.stdio
def test_stdio_answers_requests_with_bad_ids(stdio: StdioServer) -> None:
    for raw_id, says in BAD_IDS.values():
        stdio.send(_bad_id_line(raw_id))
        answer = stdio.receive()
        assert _is_bad_id_refusal(answer, says), answer
    assert stdio.request("tools/list")["result"]["tools"]  # and it keeps serving, in order


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
@pytest.mark.slow
async def test_http_answers_requests_with_bad_ids(era: str) -> None:
    base = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream"}
    async with http_server() as srv, httpx2.AsyncClient(headers=base, timeout=BOUND_S) as http:
        params = '{"name":"list_ports","arguments":{}}'
        if era == "2025-11-25":
            init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE_PARAMS}
            r = await http.post(srv.url, json=init)
            headers = {"mcp-session-id": r.headers["mcp-session-id"], "mcp-protocol-version": era}
            await http.post(srv.url, json=INITIALIZED, headers=headers)
        else:
            headers = {"mcp-protocol-version": era, "mcp-method": "tools/call", "mcp-name": "list_ports"}
            meta = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
            params = '{"name":"list_ports","arguments":{},' + meta + "}"
        headers["content-type"] = "application/json"
        for raw_id, says in BAD_IDS.values():
            with anyio.fail_after(BOUND_S):
                r = await http.post(
                    srv.url, content=_bad_id_line(raw_id, params=params).encode(), headers=headers
                )
            assert r.status_code == 400, (raw_id, r.status_code, r.text)
            assert _is_bad_id_refusal(r.json(), says), r.text
        with anyio.fail_after(BOUND_S):  # a good id is still served
            r = await http.post(srv.url, content=_bad_id_line("7", params=params).encode(), headers=headers)
        assert r.status_code == 200 and '"id":7' in r.text and "structuredContent" in r.text, r.text


# Params the SDK's schema check refuses: it answered only "Invalid request parameters".
BAD_PARAMS = {
    "tool name not a string": ("tools/call", '{"name":5}', "params.name: input should be a valid string"),
    "no params": ("tools/call", "null", "params is required"),
    "uri not a string": ("resources/read", '{"uri":5}', "params.uri: input should be a valid string"),
    "unknown level": ("logging/setLevel", '{"level":"loud"}', "params.level: input should be"),
    "handshake without fields": ("initialize", "{}", "params.capabilities is required"),
}


@pytest.mark.stdio
@pytest.mark.parametrize("case", list(BAD_PARAMS))
def test_stdio_says_which_params_are_wrong(stdio: StdioServer, case: str) -> None:
    method, params, says = BAD_PARAMS[case]
    stdio.next_id += 1
    stdio.send(f'{{"jsonrpc":"2.0","id":{stdio.next_id},"method":"{method}","params":{params}}}')
    answer = stdio.receive()
    assert answer["id"] == stdio.next_id and answer["error"]["code"] == -32602, answer
    assert answer["error"]["message"].startswith(f"the {method} request's params are not valid: ")
    assert says in answer["error"]["message"], answer


@pytest.mark.stdio
@pytest.mark.parametrize("arguments", ['"x"', "[1]", "5"])
def test_stdio_tool_call_whose_arguments_are_not_an_object_is_a_tool_error(
    stdio: StdioServer, arguments: str
) -> None:
    stdio.next_id += 1
    stdio.send(_call(stdio.next_id, "list_ports", arguments))
    answer = stdio.receive()
    assert answer["id"] == stdio.next_id and answer["result"]["isError"] is True, answer
    err = answer["result"]["structuredContent"]["error"]
    assert err["code"] == "invalid_argument" and "params.arguments: input should be" in err["message"], err


@pytest.mark.anyio
@pytest.mark.slow
async def test_http_says_which_params_are_wrong() -> None:
    era = "2026-07-28"
    base = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream"}
    headers = {"mcp-protocol-version": era, "content-type": "application/json"}
    meta = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
    async with http_server() as srv, httpx2.AsyncClient(headers=base, timeout=BOUND_S) as http:
        body = '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_ports","arguments":"x",' + meta + "}}"
        with anyio.fail_after(BOUND_S):
            r = await http.post(
                srv.url, content=body.encode(), headers={**headers, "mcp-method": "tools/call", "mcp-name": "list_ports"}
            )
        assert r.status_code == 200, r.text
        assert '"isError":true' in r.text and "params.arguments: input should be" in r.text, r.text
        body = '{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":null,' + meta + "}}"
        with anyio.fail_after(BOUND_S):
            r = await http.post(srv.url, content=body.encode(), headers={**headers, "mcp-method": "prompts/get"})
        assert "params.name: input should be a valid string" in r.text, (r.status_code, r.text)


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
@pytest.mark.slow
async def test_http_client_gone_mid_body_is_no_server_error(era: str, caplog: pytest.LogCaptureFixture) -> None:
    """A client that sends half a body and hangs up is a normal network event: nothing to answer,
    no "Exception in ASGI application" traceback, and the server goes on serving."""
    base = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream"}
    async with http_server() as srv, httpx2.AsyncClient(headers=base, timeout=BOUND_S) as http:
        hostport = srv.url.split("//")[1].split("/")[0]
        host, port = hostport.split(":")
        stream = await anyio.connect_tcp(host, int(port))
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: {hostport}\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"mcp-protocol-version: {era}\r\nContent-Length: 1000\r\n\r\n"
        )
        await stream.send(head.encode() + b'{"jsonrpc":"2.0","id":1,')
        await anyio.sleep(0.2)  # the server is waiting for the rest of the body
        uvicorn_log = logging.getLogger("uvicorn.error")  # it does not propagate to the root logger
        uvicorn_log.addHandler(caplog.handler)
        with caplog.at_level("INFO"):
            await stream.aclose()
            with anyio.fail_after(BOUND_S):
                while not any(
                    "went away after" in r.getMessage() or r.levelname == "ERROR" for r in caplog.records
                ):
                    await anyio.sleep(0.02)
        uvicorn_log.removeHandler(caplog.handler)
        assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")], caplog.text
        init = {"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": INITIALIZE_PARAMS}
        r = await http.post(srv.url, json=init)  # and it goes on serving
        assert r.status_code == 200 and '"id":2' in r.text.replace(" ", ""), r.text
