"""Streamable HTTP at /mcp: loopback by default, DNS-rebinding protection on, bearer token required
off loopback (the server refuses to start without one)."""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import INVALID_REQUEST
from starlette.types import ASGIApp, Receive, Scope, Send

from serial_mcp import messages
from serial_mcp.config import ConfigError
from serial_mcp.mcp import sdk_private
from serial_mcp.mcp.disconnect import (
    PARSED_BODY,
    DisconnectWatch,
    OneMethod,
    SessionEndWait,
    parse_body,
    read_body,
    replay,
    send_json,
)
from serial_mcp.mcp.line_screen import bad_id_problem

log = logging.getLogger(__name__)

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}
SESSION_IDLE_TIMEOUT = 30 * 60.0  # seconds: the SDK's default, said here so a test can shorten it


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bearer_credentials(header: bytes) -> bytes | None:
    """The token of an ``Authorization: Bearer <token>`` value, or None for another scheme.

    RFC 7235: the scheme is case-insensitive and separated from its credentials by whitespace;
    surrounding whitespace is ignored. A bearer token (token68) holds no whitespace.
    """
    parts = header.split()
    if len(parts) != 2 or parts[0].lower() != b"bearer":
        return None
    return parts[1]


class BearerAuth:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``, else 401.

    The scheme is matched case-insensitively (``bearer``, ``BEARER``); the token is compared in
    constant time."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = token.encode()

    def _authorised(self, scope: Scope) -> bool:
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        token = bearer_credentials(given)
        # compare_digest even when the scheme was wrong, so the timing says nothing about either
        return hmac.compare_digest(token or b"", self._expected) and token is not None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._authorised(scope):
            challenge = ((b"www-authenticate", b'Bearer realm="serial-mcp"'),)
            await send_json(send, 401, messages.HTTP_UNAUTHORIZED.encode(), challenge)
            return
        await self.app(scope, receive, send)


class BadIdScreen(OneMethod):
    """ASGI middleware: a POSTed request whose ``id`` is ``true``, ``1.5``, ``null``, ``[]`` … gets a
    JSON-RPC error (400, id null). The SDK reads such a request as a notification: the 2025-11-25
    era answered it ``202 Accepted`` and nothing else, the request never answered.

    It reads the whole body first (as ``DisconnectWatch`` does behind it), so it also sees a client
    that hangs up halfway through its body: nobody is left to answer, and the SDK would log that
    as an error with a traceback."""

    async def serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        body, received = await read_body(receive)
        if received[-1]["type"] == "http.disconnect":  # gone before its body was whole: no one to answer
            log.info(messages.HTTP_CLIENT_GONE_MID_BODY, len(body))
            return
        doc = parse_body(body)  # what is not JSON, the SDK answers
        problem = bad_id_problem(doc)
        if problem is None:  # the watch behind us reads the same body: it need not parse it again
            await self.app({**scope, PARSED_BODY: doc}, replay(received, receive), send)
            return
        error = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": problem}}
        await send_json(send, 400, json.dumps(error).encode())


def security_for(host: str) -> sdk_private.TransportSecuritySettings | None:
    """Loopback: the SDK's automatic protection. Elsewhere: explicit Host/Origin allowlists, still on."""
    if is_loopback(host):
        return None
    hosts = [f"{host}:*", "127.0.0.1:*", "localhost:*", "[::1]:*"]
    return sdk_private.TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"http://{h}" for h in hosts] + [f"https://{h}" for h in hosts],
    )


def build_http_app(
    server: MCPServer, host: str, token: str | None, *, session_idle_timeout: float = SESSION_IDLE_TIMEOUT
) -> Any:
    """The ASGI app to serve: refuses an unauthenticated non-loopback bind (one clear line).

    A session that sends nothing for ``session_idle_timeout`` seconds (a client that went away
    without a DELETE) is ended as a DELETE ends it."""
    if not is_loopback(host) and not token:
        raise ConfigError(messages.HTTP_NEEDS_TOKEN.format(host=host))
    app: Any = server.streamable_http_app(
        host=host, transport_security=security_for(host), session_idle_timeout=session_idle_timeout
    )
    app = SessionEndWait(app)  # a DELETE is answered once its session's ports are closed
    app = DisconnectWatch(app)  # a dropped stream ends its call (and disarms its responders)
    app = BadIdScreen(app)  # a request with a bad id is answered, not taken for a notification
    if token:
        app = BearerAuth(app, token)
    return app


async def serve_http(server: MCPServer, host: str, port: int, token: str | None, log_level: str) -> None:
    import uvicorn

    app = build_http_app(server, host, token)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level.lower(), lifespan="on")
    await uvicorn.Server(config).serve()
