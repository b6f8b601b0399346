"""The HTML file: one self-contained document whose embedded data is the view model."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from serial_mcp.view.model import ViewOptions, build_view
from serial_mcp.view.render import render_page
from tests.view.helpers import SAMPLES


class Outline(HTMLParser):
    """Tags, ids, external references and script bodies of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.tags: list[str] = []
        self.references: list[str] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._script: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append(tag)
        if a.get("id"):
            self.ids.add(str(a["id"]))
        for key in ("src", "href"):
            if a.get(key):
                self.references.append(str(a[key]))
        if tag == "link":
            self.references.append(str(a))
        if tag == "script":
            self._script = a

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self.scripts.append((self._script, data))


def page_of(path: Path, protocol: str | None = None) -> tuple[str, dict[str, Any]]:
    data = build_view(path.read_bytes(), path.name, ViewOptions(protocol=protocol))
    return render_page(data), data


@pytest.mark.parametrize("path", sorted(SAMPLES.glob("*.jsonl")), ids=lambda p: p.stem)
def test_page_is_self_contained_and_carries_the_data(path: Path) -> None:
    html, data = page_of(path, "nmea0183" if path.stem.startswith("gps") else None)
    outline = Outline()
    outline.feed(html)
    assert html.startswith("<!DOCTYPE html>")
    assert outline.references == []  # no src=, href=, <link>: nothing to fetch
    assert not re.search(
        r"https?://(?!www\.w3\.org/2000/svg)", html
    )  # the SVG namespace is a name, not a fetch
    assert "default-src 'none'" in html
    for element in ("meta", "timeline", "transcript", "ts-search", "frames", "fr-kind", "plots", "view-data"):
        assert element in outline.ids
    embedded = [body for attrs, body in outline.scripts if attrs.get("type") == "application/json"]
    assert len(embedded) == 1 and json.loads(embedded[0]) == json.loads(json.dumps(data))
    code = [body for attrs, body in outline.scripts if "type" not in attrs]
    assert len(code) == 1 and "serialView" in code[0]
    assert "<style>" in html and "#timeline" in html


def test_header_shows_the_capture_metadata() -> None:
    html, data = page_of(SAMPLES / "gps-gpsdf-bad-checksums.jsonl", "nmea0183")
    header = html.split('<header id="meta">', 1)[1].split("</header>", 1)[0]
    for text in ("/dev/ttyUSB0", "115200 8N1", "8647 bytes", "nmea0183", "(4 bad)", "serial-mcp 0.1.0"):
        assert text in header
    assert f"{data['meta']['duration']:.3f} s" in header


def test_capture_content_cannot_end_the_script_element(tmp_path: Path) -> None:
    evil = tmp_path / "evil.jsonl"
    payload = b"</script><script>alert(1)</script><!--"
    evil.write_text(
        '{"format": "serial-mcp-capture", "version": 1, "created": "2026-12-01T10:00:00Z", "port": "</script>"}\n'
        f'{{"t": 0.1, "type": "rx", "data": "{payload.hex()}"}}\n'
        '{"t": 0.2, "type": "marker", "label": "<img src=x onerror=alert(1)>"}\n'
    )
    html, _ = page_of(evil)
    assert html.count("</script>") == 2  # the data element's and the code's own
    assert "<img" not in html
    embedded = html.split('<script type="application/json" id="view-data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(embedded)["rows"][0][4] == payload.decode()


def test_every_asset_ships_as_package_data() -> None:
    import tomllib
    from pathlib import PurePosixPath

    import serial_mcp.view

    config = tomllib.loads((SAMPLES.parent / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["serial_mcp.view"]
    package = Path(serial_mcp.view.__file__).parent
    assets = [p.relative_to(package).as_posix() for p in (package / "assets").rglob("*") if p.is_file()]
    assert any(a.startswith("assets/js/") for a in assets)
    assert [a for a in assets if not any(PurePosixPath(a).match(p) for p in patterns)] == []
