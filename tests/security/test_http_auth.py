"""HTTP bearer auth: the scheme is case-insensitive (RFC 7235), the token must match exactly."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import anyio
import pytest

from serial_mcp.mcp.http import BearerAuth, bearer_credentials

pytestmark = pytest.mark.anyio

TOKEN = "s3cret-Token_42"


async def _status(authorization: bytes | None) -> int:
    """Send one HTTP request through BearerAuth in front of an app that answers 200."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    headers = [(b"host", b"127.0.0.1")]
    if authorization is not None:
        headers.append((b"authorization", authorization))
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers}
    with anyio.fail_after(10):
        await BearerAuth(app, TOKEN)(scope, receive, send)
    status: int = sent[0]["status"]
    return status


@pytest.mark.parametrize(
    "value",
    [
        f"Bearer {TOKEN}",
        f"bearer {TOKEN}",
        f"BEARER {TOKEN}",
        f"BeArEr {TOKEN}",
        f"Bearer   {TOKEN}",
        f"  bearer {TOKEN}  ",
        f"Bearer\t{TOKEN}",
    ],
)
async def test_any_case_of_the_scheme_is_accepted(value: str) -> None:
    assert await _status(value.encode()) == 200


@pytest.mark.parametrize(
    "value",
    [
        None,
        b"",
        b"Bearer",
        b"Bearer ",
        TOKEN.encode(),
        f"Basic {TOKEN}".encode(),
        f"Bearer {TOKEN.lower()}".encode(),  # the token itself is case-sensitive
        f"Bearer {TOKEN}x".encode(),
        f"Bearer {TOKEN[:-1]}".encode(),
        f"Bearer {TOKEN} extra".encode(),
        f"Bearer{TOKEN}".encode(),
        f"Bearer {TOKEN}".encode() + b"\xff",
    ],
)
async def test_wrong_scheme_or_token_is_401(value: bytes | None) -> None:
    assert await _status(value) == 401


def test_credentials_parsing() -> None:
    assert bearer_credentials(b"bearer abc") == b"abc"
    assert bearer_credentials(b"Token abc") is None
    assert bearer_credentials(b"Bearer a b") is None
