"""The SDK's OpenTelemetry middleware runs only when a tracer provider collects its spans."""

from __future__ import annotations

import pytest
from mcp.server._otel import OpenTelemetryMiddleware
from opentelemetry import trace

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from tests.tool_calls import call

pytestmark = pytest.mark.anyio


def _has_tracing(server: object) -> bool:
    return any(isinstance(m, OpenTelemetryMiddleware) for m in server.middleware)  # type: ignore[attr-defined]


async def test_no_span_per_message_when_nobody_collects_them() -> None:
    from mcp import Client

    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)  # nothing installed
    opener = FakeOpener()
    opener.add("/dev/ttyFAKE0")
    server = build_server(ConnectionManager(opener))
    assert not _has_tracing(server)
    async with Client(server) as client:  # the rest of the chain still serves every call
        opened = await call(client, "open", {"port": "/dev/ttyFAKE0"})
        listed = await call(client, "list_connections", {})
        assert [c["connection_id"] for c in listed["connections"]] == [opened["connection_id"]]


def test_spans_stay_when_a_tracer_provider_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    installed = trace.NoOpTracerProvider()  # any provider set by the host, as opentelemetry-instrument does
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: installed)
    server = build_server(ConnectionManager(FakeOpener()))
    assert _has_tracing(server)
