"""ASGI middleware: when an HTTP client drops a tools/call stream before its answer, end that call.

The SDK keeps a 2025-11-25 session's request running after its client went away (there is no event
store to resume it), so a ``read`` with ``timeout_ms`` 600000 and a ``respond`` rule would go on
writing to the device for ten minutes. This middleware buffers the request body (to learn its
session and JSON-RPC ids), then listens for ``http.disconnect``: a disconnect that comes before the
response is complete cancels those calls (``callers.cancel_request``), which disarms their responders.

``SessionEndWait`` holds the answer to a session's DELETE until the session has let go of what it
held (its ports closed, its cursors dropped): a client that deletes its session and opens the
port again, or hands it to another session, finds it free.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from serial_mcp.mcp import callers

log = logging.getLogger(__name__)
MAX_BODY = 8 * 1024 * 1024  # larger bodies are passed through unwatched (the SDK refuses them anyway)
RELEASE_WAIT_S = 10.0  # the longest a DELETE's answer waits for its session's release


NOT_JSON = object()  # parse_body's answer for a body that is not JSON (or is over MAX_BODY)
PARSED_BODY = "serial_mcp.parsed_body"  # scope key: a middleware in front already parsed the body


def parse_body(body: bytes) -> Any:
    """A POST body as JSON, parsed once for every middleware (``NOT_JSON`` when it is not)."""
    if len(body) > MAX_BODY:
        return NOT_JSON
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return NOT_JSON


def _call_ids(doc: Any) -> list[object]:
    items = doc if isinstance(doc, list) else [doc]
    return [m["id"] for m in items if isinstance(m, dict) and m.get("method") == "tools/call" and "id" in m]


class OneMethod:
    """ASGI middleware for the HTTP requests of one ``method`` (``serve``); the rest pass through."""

    method = "POST"

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != self.method:
            await self.app(scope, receive, send)
        else:
            await self.serve(scope, receive, send)

    async def serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        raise NotImplementedError


def session_of(scope: Scope) -> str:
    """The request's ``Mcp-Session-Id`` ("" without one)."""
    return str(dict(scope.get("headers") or []).get(b"mcp-session-id", b"").decode("latin-1"))


async def send_json(
    send: Send, status: int, body: bytes, headers: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    """A whole JSON (or text) answer of ours, in place of the app's."""
    start = {"type": "http.response.start", "status": status}
    await send({**start, "headers": [(b"content-type", b"application/json"), *headers]})
    await send({"type": "http.response.body", "body": body})


class DisconnectWatch(OneMethod):
    async def serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        session = session_of(scope)
        body, messages = await read_body(receive)  # the whole body first: it names its calls
        doc = scope[PARSED_BODY] if PARSED_BODY in scope else parse_body(body) if session else NOT_JSON
        ids = _call_ids(doc) if session else []
        if not ids:
            await self.app(scope, replay(messages, receive), send)
            return
        done = anyio.Event()
        gone = anyio.Event()

        async def watched_send(message: Message) -> None:
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                done.set()

        async def app_receive() -> Message:
            if messages:
                return messages.pop(0)
            await gone.wait()
            return {"type": "http.disconnect"}

        async def watch() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    break
            gone.set()
            if not done.is_set():
                for request_id in ids:
                    if callers.cancel_request(session, request_id):
                        log.info("client dropped request %r: call cancelled", request_id)

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            try:
                await self.app(scope, app_receive, watched_send)
            finally:
                done.set()
                tg.cancel_scope.cancel()


class SessionEndWait(OneMethod):
    """ASGI middleware: a DELETE that ends a session is answered once the session is released."""

    method = "DELETE"

    async def serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        ended = callers.session_ended(session_of(scope))
        if ended is None:  # no such live session (or it never called): nothing to wait for
            await self.app(scope, receive, send)
            return
        held: list[Message] = []

        async def hold(message: Message) -> None:
            held.append(message)

        await self.app(scope, receive, hold)
        status = next((m.get("status", 500) for m in held if m["type"] == "http.response.start"), 500)
        if status < 300:  # the session was ended: its release runs as the SDK unwinds it
            with anyio.move_on_after(RELEASE_WAIT_S):
                await ended.wait()
            if not ended.is_set():
                log.warning("session release still running after %.0f s; DELETE answered", RELEASE_WAIT_S)
        for message in held:
            await send(message)


async def read_body(receive: Receive) -> tuple[bytes, list[Message]]:
    """A request's body, read up to just past ``MAX_BODY``, and the ASGI messages it came in (for
    ``replay``, so the app behind still receives every one of them)."""
    body = bytearray()
    messages: list[Message] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        body += message.get("body", b"")
        if not message.get("more_body") or len(body) > MAX_BODY:
            break
    return bytes(body), messages


def replay(messages: list[Message], receive: Receive) -> Any:
    """``receive`` for the app behind: the messages already read, then the client's own."""

    async def replayed() -> Message:
        if messages:
            return messages.pop(0)
        return await receive()

    return replayed
