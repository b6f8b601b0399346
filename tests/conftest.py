"""Shared fixtures: anyio on asyncio (the backend the MCP SDK runs on)."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
