"""Make README's picture of ``serial-mcp view``: a sample GPS capture's page, shot in headless Chromium.

    python tools/make_view_screenshot.py [--capture captures/gps-quectel-l76k.jsonl]
                                         [--out docs/images/view-gps.png] [--sample docs/images/view-gps.html]

The page is what ``serial-mcp view CAPTURE --protocol nmea0183`` writes; it is also kept beside the
picture as a sample to open. Chromium is Debian's (``/usr/bin/chromium``, or ``SERIAL_MCP_CHROMIUM``),
driven by Playwright, as the view's browser tests drive it (tests/view/conftest.py). The picture is
kept small (tests/commands/test_readme_commands.py holds it under 200 KB): one viewport, scale 1.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHROMIUM = Path(os.environ.get("SERIAL_MCP_CHROMIUM", "/usr/bin/chromium"))
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
VIEWPORT = {"width": 1100, "height": 640}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--capture", type=Path, default=ROOT / "captures" / "gps-quectel-l76k.jsonl")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "images" / "view-gps.png")
    ap.add_argument("--sample", type=Path, default=ROOT / "docs" / "images" / "view-gps.html")
    opts = ap.parse_args()

    from playwright.sync_api import sync_playwright

    from serial_mcp.view.command import run_view

    opts.out.parent.mkdir(parents=True, exist_ok=True)
    code = run_view(str(opts.capture), str(opts.sample), "nmea0183", None, None, None)
    if code != 0:
        return code
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT, device_scale_factor=1)
            page.goto(opts.sample.resolve().as_uri())
            page.wait_for_load_state("load")
            page.wait_for_timeout(1500)  # the timeline and plots draw after load
            page.screenshot(path=str(opts.out))
        finally:
            browser.close()
    print(f"{opts.out} ({opts.out.stat().st_size} bytes), sample page {opts.sample}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
