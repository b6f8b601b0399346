"""A real headless browser for the page tests: Debian's chromium driven by Playwright.

Playwright's own browser download is not used (nor reachable in CI): the tests launch the system
``/usr/bin/chromium`` (``.ci/run`` installs it). Without it, or without the ``playwright``
package, the browser tests skip with a reason saying what is missing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path(os.environ.get("SERIAL_MCP_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _missing() -> str | None:
    if not CHROMIUM.exists():
        return f"BROWSER TESTS SKIPPED: {CHROMIUM} not found (apt-get install chromium; .ci/run does it)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "BROWSER TESTS SKIPPED: the playwright package is missing (pip install -e '.[test]')"
    return None


# Module, not session: Playwright's sync API keeps an asyncio loop running on the main thread while it
# lives, and an anyio test run after it on the same xdist worker (the serial tests come last) could not
# start its own loop.
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    reason = _missing()
    if reason:
        sys.stderr.write(f"\n*** {reason} ***\n")
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()
