"""The page in a real browser (headless chromium): it loads cleanly and its parts work and agree.

Each test keeps a screenshot in its temporary directory (a CI artifact; nothing is committed).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from serial_mcp.store.capture_files import read_capture
from serial_mcp.view.command import run_view
from serial_mcp.view.timeline import detected_markers
from tests.view.helpers import DATA, SAMPLES, capture_from_raw, data_event_counts, nmea_sentences

pytestmark = [
    pytest.mark.slow,
    pytest.mark.threads_outlive_the_test(
        "Playwright's session-long event loop starts its executor threads on first use"
    ),
]

LOAD_TIMEOUT_MS = 60_000  # a bound on a failure, not a speed requirement
# Conditions to wait for are functions: a string expression would be eval()ed in the page, which
# the page's Content-Security-Policy (rightly) refuses.


@dataclass
class Loaded:
    page: Any
    problems: list[str] = field(default_factory=list)

    def js(self, expression: str) -> Any:
        return self.page.evaluate(expression)


@pytest.fixture
def open_page(browser: Any, tmp_path: Path) -> Iterator[Any]:
    pages: list[Any] = []

    def load(capture: Path, *options: str, name: str = "view", **view_options: Any) -> Loaded:
        out = tmp_path / f"{name}.html"
        protocol = options[0] if options and not options[0].startswith("--") else None
        fields = list(options[2:]) if len(options) > 2 and options[1] == "--fields" else None
        assert run_view(str(capture), str(out), protocol, None, None, fields, **view_options) == 0
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        pages.append(page)
        loaded = Loaded(page)
        page.on(
            "console",
            lambda m: (
                loaded.problems.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None
            ),
        )
        page.on("pageerror", lambda e: loaded.problems.append(f"pageerror: {e}"))
        page.on(
            "request",
            lambda r: (
                None
                if r.url.startswith(("file:", "data:", "about:"))
                else loaded.problems.append(f"network: {r.url}")
            ),
        )
        page.goto(out.as_uri())
        page.wait_for_selector("body[data-ready='1']", timeout=LOAD_TIMEOUT_MS)
        return loaded

    yield load
    for i, page in enumerate(pages):
        page.screenshot(path=str(tmp_path / f"screenshot-{i}.png"), full_page=True)
        page.close()


PROTOCOLS = {
    "gps-quectel-l76k": "nmea0183",
    "gps-gpsdf-bad-checksums": "nmea0183",
    "modbus-ascii-delta": "modbus_ascii",
    "at-modem-session": "at_command",
}


@pytest.mark.parametrize("capture", sorted(SAMPLES.glob("*.jsonl")), ids=lambda p: p.stem)
def test_sample_pages_load_cleanly_with_every_event_on_the_timeline(open_page: Any, capture: Path) -> None:
    protocol = PROTOCOLS.get(capture.stem)
    loaded = open_page(capture, *([protocol] if protocol else []))
    rx, tx = data_event_counts(capture)
    ds = loaded.js("Object.assign({}, document.getElementById('timeline').dataset)")
    assert (int(ds["events"]), int(ds["rxEvents"]), int(ds["txEvents"])) == (rx + tx, rx, tx)
    assert int(ds["drawnEvents"]) == rx + tx  # the whole session is in view at first
    assert 0 < int(ds["drawnColumns"]) <= rx + tx
    c = read_capture(capture)
    detected = len(detected_markers(c.events))  # boots and crashes found in the bytes (issue 24)
    assert int(ds["drawnMarkers"]) == sum(e.type not in ("rx", "tx") for e in c.events) + detected
    assert loaded.page.locator("#transcript .row").count() == min(400, loaded.js("serialView.rows"))
    assert loaded.problems == []


def test_empty_capture_and_raw_file_pages_load_cleanly(open_page: Any, tmp_path: Path) -> None:
    header_only = tmp_path / "empty.jsonl"
    header_only.write_text(
        '{"format": "serial-mcp-capture", "version": 1, "created": "2026-12-01T10:00:00Z"}\n'
    )
    for i, capture in enumerate((header_only, DATA / "nmea" / "gpsdf.log")):
        loaded = open_page(capture, "nmea0183", name=f"edge{i}")
        assert loaded.problems == []
    bad = sum(not ok for _, ok in nmea_sentences((DATA / "nmea" / "gpsdf.log").read_bytes()))
    assert loaded.page.locator("#fr-counts").get_attribute("data-bad") == str(bad)


def test_searching_the_transcript_finds_a_known_line(open_page: Any) -> None:
    loaded = open_page(SAMPLES / "uboot-mt7622.jsonl")
    box = loaded.page.locator("#ts-search")
    box.fill("U-Boot 2014.04")
    box.press("Enter")
    hit = loaded.page.locator("#transcript .row.hit")
    assert hit.count() == 1
    assert "U-Boot 2014.04-rc1" in hit.inner_text()
    assert hit.locator("mark").first.inner_text() == "U-Boot 2014.04"
    assert loaded.page.locator("#ts-count").inner_text().startswith("match 1 of ")
    # the timeline's cursor moved to the line's time
    row_t = loaded.js("serialView.data.rows[serialView.state.hits[serialView.state.hit]][0]")
    assert loaded.js("serialView.state.cursor") == row_t
    box.fill("no such text anywhere")
    box.press("Enter")
    assert loaded.page.locator("#ts-count").inner_text() == "no match"
    assert loaded.problems == []


def test_bad_nmea_frames_are_highlighted_and_counted(open_page: Any) -> None:
    capture = SAMPLES / "gps-gpsdf-bad-checksums.jsonl"
    bad = [a for a, ok in nmea_sentences(read_capture(capture).payload("rx")) if not ok]
    loaded = open_page(capture, "nmea0183")
    rows = loaded.page.locator("#frames tbody tr.bad")
    assert rows.count() == len(bad) == 4
    assert all(
        "$PGLOR" in rows.nth(i).inner_text() and "bad" in rows.nth(i).locator("td.chk").inner_text()
        for i in range(4)
    )
    background = rows.first.locator("td").first.evaluate("td => getComputedStyle(td).backgroundColor")
    assert background not in ("rgba(0, 0, 0, 0)", "rgb(255, 255, 255)")
    assert loaded.page.locator("#fr-counts").get_attribute("data-bad") == "4"
    loaded.page.locator("#fr-bad").check()
    assert loaded.page.locator("#frames tbody tr").count() == 4
    loaded.page.locator("#fr-bad").uncheck()
    loaded.page.locator("#fr-kind").select_option(
        loaded.page.locator('#fr-kind option[data-kind="GGA"]').get_attribute("value")
    )
    gga = sum(a.endswith("GGA") for a, ok in nmea_sentences(read_capture(capture).payload("rx")))
    assert loaded.page.locator("#frames tbody tr").count() == gga
    # a frame links to its line in the transcript
    loaded.page.locator("#frames tbody tr").first.click()
    assert "GGA" in loaded.page.locator("#transcript .row.sel").inner_text()
    assert loaded.problems == []


def test_print_filter_hides_lines_from_the_frames_table_and_says_how_many(open_page: Any) -> None:
    from serial_mcp.view.model import ViewOptions, build_view

    capture = SAMPLES / "esp32-boot.jsonl"
    frames = build_view(capture.read_bytes(), capture.name, ViewOptions(print_filter="*:W"))["frames"]
    loaded = open_page(capture, print_filter="*:W")
    assert loaded.page.locator("#frames tbody tr").count() == len(frames["t"])
    counts = loaded.page.locator("#fr-counts")
    assert counts.get_attribute("data-filtered") == str(frames["filtered"]) != "0"
    assert f"{frames['filtered']} hidden by --print-filter *:W" in counts.inner_text()
    assert loaded.problems == []


def test_plot_has_one_point_per_sentence(open_page: Any) -> None:
    capture = SAMPLES / "gps-quectel-l76k.jsonl"
    gga = [a for a, ok in nmea_sentences(read_capture(capture).payload("rx")) if ok and a.endswith("GGA")]
    loaded = open_page(capture, "nmea0183", "--fields", "GGA.satellites", "GGA.altitude_m")
    for name in ("GGA.satellites", "GGA.altitude_m"):
        svg = loaded.page.locator(f'#plots svg[data-name="{name}"]')
        assert svg.get_attribute("data-points") == str(len(gga))
        assert svg.locator("circle").count() == len(gga)
        assert svg.locator("polyline").count() == 1
    assert loaded.problems == []


def test_timeline_zooms_pans_and_links_to_the_transcript(open_page: Any) -> None:
    loaded = open_page(SAMPLES / "at-modem-session.jsonl", "at_command")
    canvas = loaded.page.locator("#timeline")
    total = int(canvas.get_attribute("data-events"))
    box = canvas.bounding_box()
    loaded.page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + 60)
    for _ in range(5):
        loaded.page.mouse.wheel(0, -400)
    loaded.page.wait_for_function(
        f"() => Number(document.getElementById('timeline').dataset.drawnEvents) < {total}"
    )
    loaded.page.locator("#tl-fit").click()
    loaded.page.wait_for_function(
        f"() => Number(document.getElementById('timeline').dataset.drawnEvents) == {total}"
    )
    # click on the first TX mark: the transcript selects that command
    x = loaded.js(
        "(() => { const s = serialView.state, t = serialView.data.timeline; const i = t.dir.indexOf('t');"
        " return (t.t[i] - s.t0) / (s.t1 - s.t0) * document.getElementById('timeline').clientWidth; })()"
    )
    canvas.click(position={"x": x, "y": 70})
    selected = loaded.page.locator("#transcript .row.sel")
    assert selected.count() == 1 and "TX" in selected.inner_text() and "AT" in selected.inner_text()
    # and a transcript row moves the timeline cursor to its time
    loaded.page.locator("#transcript .row.r").nth(3).click()
    t = loaded.js("serialView.data.rows[Number(document.querySelector('#transcript .row.sel').dataset.i)][0]")
    assert loaded.js("serialView.state.cursor") == t
    assert loaded.problems == []


def test_ansi_colours_rendered_or_stripped(open_page: Any) -> None:
    loaded = open_page(SAMPLES / "esp32-boot.jsonl")
    coloured = "#transcript .row .c span[style*='color']"
    assert loaded.page.locator(coloured).count() > 0
    probes = loaded.page.locator("#transcript .row .esc")
    assert probes.count() > 0 and "\\e[6n" in probes.all_inner_texts()  # terminal probes are visible
    assert "\\n" in loaded.page.locator("#transcript .row .ctl").all_inner_texts()  # so are line endings
    loaded.page.locator("#ts-ansi").select_option("strip")
    assert loaded.page.locator(coloured).count() == 0
    assert loaded.page.locator("#transcript .row .esc").count() == 0
    assert "\x1b" not in loaded.page.locator("#transcript").inner_text()
    assert loaded.problems == []


def test_large_capture_is_paged_and_aggregated(open_page: Any, tmp_path: Path) -> None:
    raw = (DATA / "nmea" / "quectel-l76k-nmea.log").read_bytes() * 8  # ~1 MB, ~17k lines
    capture = capture_from_raw(
        raw, tmp_path / "big.jsonl", baud=115200, chunk_lines=2, pause_every=500, pause_s=3.0
    )
    loaded = open_page(capture, "nmea0183", name="big")
    rows = loaded.js("serialView.rows")
    assert rows > 10_000
    assert loaded.page.locator("#transcript .row").count() == 400
    assert loaded.page.locator("#frames tbody tr").count() == 250
    ds = loaded.js("Object.assign({}, document.getElementById('timeline').dataset)")
    width = loaded.js("document.getElementById('timeline').clientWidth")
    assert int(ds["drawnEvents"]) == int(ds["events"]) > 8000
    assert int(ds["drawnColumns"]) <= 2 * width  # aggregated per pixel column, per lane
    assert int(ds["gaps"]) > 10
    # search reaches a row on a later page
    loaded.page.locator("#ts-search").fill("$GNGGA")
    for _ in range(3):
        loaded.page.locator("#ts-search").press("Enter")
    last = loaded.js("serialView.state.hits.length")
    assert loaded.js("serialView.state.hit") == 2
    for _ in range(3):  # back to the first match, then around to the last one
        loaded.page.locator("#ts-search").press("Shift+Enter")
    assert loaded.js("serialView.state.hit") == last - 1
    assert loaded.js("serialView.state.rowPage") > 0
    assert loaded.page.locator("#transcript .row.hit").count() == 1
    plots = loaded.page.locator("#plots svg")
    assert plots.count() >= 1
    assert loaded.problems == []


# --- axes under hostile numbers (issue 28.13) -----------------------------------------------------
MAX_TICKS = 100  # the page's cap on one axis' ticks (AXIS_MAX_TICKS in assets/js/00-data.js)
STALL_MS = 20_000  # a bound on a failure (a draw that never ends), not a speed requirement
FAR = 10**17  # floats there are 16 apart: FAR + 16 is the next one, FAR + 2 rounds back to FAR


def json_capture(path: Path, times: list[float], values: list[dict[str, Any]]) -> Path:
    """A capture of json_lines frames, one rx event per value, at the given times."""
    from serial_mcp.core.capture import CaptureEvent, CaptureHeader, capture_text

    events, offset = [], 0
    for t, value in zip(times, values, strict=True):
        data = (json.dumps(value) + "\n").encode()
        events.append(CaptureEvent(t, "rx", data, offset))
        offset += len(data)
    header = CaptureHeader(created="2026-12-01T10:00:00.000000Z", port="/dev/ttyTEST", source="tests/view")
    path.write_text(capture_text(header, events), encoding="utf-8")
    return path


def test_plots_of_values_one_float_step_apart_are_drawn_with_few_distinct_ticks(
    open_page: Any, tmp_path: Path
) -> None:
    values = [
        {
            "far": FAR + 16 * (i % 2),  # two floats one step apart
            "flat": FAR,  # one value far from zero: the axis is widened around it
            "huge": (-1 if i % 2 else 1) * 1.7e308,  # a span no float holds
            "tiny": 5e-324 * (1 + i % 2),  # denormals: a span the tick step underflows
        }
        for i in range(12)
    ]
    capture = json_capture(tmp_path / "far.jsonl", [0.1 * i for i in range(12)], values)
    loaded = open_page(capture, "json_lines", "--fields", "far", "flat", "huge", "tiny", name="far")
    for name in ("far", "flat", "huge", "tiny"):
        svg = loaded.page.locator(f'#plots svg[data-name="{name}"]')
        assert svg.get_attribute("data-points") == "12"
        y_labels = svg.locator('text[text-anchor="end"]').all_text_contents()
        assert 2 <= len(y_labels) <= MAX_TICKS, (name, y_labels)
        assert len(set(y_labels)) == len(y_labels), (name, y_labels)  # each tick says its own value
        assert svg.locator("circle").count() == 12
        assert "NaN" not in svg.inner_html() and "Infinity" not in svg.inner_html(), name
    assert loaded.problems == []


def test_timeline_zoomed_in_far_from_zero_keeps_drawing(open_page: Any, tmp_path: Path) -> None:
    times = [float(FAR + 16 * i) for i in range(8)]
    capture = json_capture(tmp_path / "late.jsonl", times, [{"v": i % 3} for i in range(8)])
    loaded = open_page(capture, "json_lines", name="late")
    # one wheel turn that zooms to about 24 s around the fourth event, where t += 1 is no step at all
    loaded.js(
        "(() => { const c = document.getElementById('timeline'), r = c.getBoundingClientRect();"
        " const s = serialView.state, t = serialView.data.timeline.t[3];"
        " const x = r.left + (t - s.t0) / (s.t1 - s.t0) * r.width;"
        " c.dispatchEvent(new WheelEvent('wheel', { deltaY: Math.log(24 / (s.t1 - s.t0)) / 0.0015,"
        " clientX: x, clientY: r.top + 60, cancelable: true })); })()"
    )
    loaded.page.wait_for_function(  # two animation frames: the zoomed draw ran to its end
        "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => done(true))))",
        timeout=STALL_MS,
    )
    state = loaded.js("({ t0: serialView.state.t0, t1: serialView.state.t1 })")
    assert state["t1"] > state["t0"] and state["t1"] - state["t0"] < 1e-3 * FAR  # it did zoom in
    ticks = int(loaded.page.locator("#timeline").get_attribute("data-ticks"))
    assert 1 <= ticks <= MAX_TICKS
    svg = loaded.page.locator('#plots svg[data-name="v"]')
    assert 1 <= svg.locator('text[text-anchor="middle"]').count() <= MAX_TICKS
    assert "NaN" not in svg.inner_html()
    assert loaded.problems == []


def test_axis_ticks_are_few_distinct_and_inside_the_span(open_page: Any) -> None:
    loaded = open_page(SAMPLES / "at-modem-session.jsonl", "at_command")
    cases = [  # (lo, hi, target) as text: JSON carries no Infinity or NaN
        ("0", "10", "4"),
        (str(FAR), str(FAR + 16), "4"),
        (str(FAR), str(FAR + 16), "1e9"),
        ("0", "0", "4"),
        ("0", "5e-324", "4"),
        ("5e-324", "1e-323", "4"),
        ("-1.7e308", "1.7e308", "4"),
        ("0", "1", "1e9"),
        ("0", "1", "0"),
        ("0", "1", "NaN"),
        ("-Infinity", "Infinity", "4"),
        ("NaN", "1", "4"),
        ("1", "0", "4"),
    ]
    got = [  # as text: Playwright hands 1e17 + 16 over as the integer 100000000000000020
        [float(v) for v in ticks]
        for ticks in loaded.page.evaluate(
            "(cases) => cases.map(([a, b, n]) => serialView.axisTicks(Number(a), Number(b), Number(n)).map(String))",
            cases,
        )
    ]
    for (lo_text, hi_text, _), ticks in zip(cases, got, strict=True):
        lo, hi = float(lo_text), float(hi_text)
        assert len(ticks) <= MAX_TICKS
        assert all(a < b for a, b in itertools.pairwise(ticks)), ticks  # distinct, in order
        assert all(lo <= v <= hi for v in ticks), (lo, hi, ticks)
    assert got[0] == [0, 2, 4, 6, 8, 10]  # an ordinary axis keeps its nice steps
    assert (
        got[1] == got[2] == [float(FAR), float(FAR + 16)]
    )  # below float resolution: the floats there, once each
    assert got[3] == [0]
    assert got[4] == [0, 5e-324] and got[5] == [5e-324, 1e-323]
    assert 3 <= len(got[6]) <= MAX_TICKS and got[6][0] < 0 < got[6][-1]
    assert got[7][0] == 0 and got[7][-1] == 1 and len(got[7]) > 10  # many asked for: capped, whole span
    assert got[8] == got[9] == [0, 1]
    assert got[10] == got[11] == got[12] == []


def test_a_crash_mark_shows_its_frames_decoded_from_the_elf(open_page: Any, tmp_path: Path) -> None:
    """``--elf``: hovering the crash's mark shows each decoded address with its function, file and line."""
    import shutil
    import subprocess

    if shutil.which("gcc") is None or shutil.which("nm") is None:
        pytest.skip("SKIPPED LOUDLY: gcc and nm are needed to build the ELF whose addresses the crash holds")
    from serial_mcp.serial.firmware_elf import load_local_elf
    from serial_mcp.view.timeline import frame_lines
    from tests.unit.test_events_elf_offline import _inside

    (tmp_path / "main.c").write_text(
        "__attribute__((noinline)) int crash_here(int *p) { return *p + 1; }\n"
        "int main(int argc, char **argv) { (void)argv; return crash_here(&argc); }\n"
    )
    subprocess.run(["gcc", "-g", "-O1", "-o", "app.elf", "main.c"], cwd=tmp_path, check=True)
    elf = load_local_elf(str(tmp_path / "app.elf"))
    pc = _inside(tmp_path / "app.elf", "crash_here")  # from the symbol table (nm)
    lines = frame_lines(elf.decode([pc]))
    log = (
        b"I (10) boot: up\n" * 40
        + b"Guru Meditation Error: Core  0 panic'ed (LoadProhibited). Exception was unhandled.\n"
        + f"PC      : 0x{pc:08x}  PS      : 0x00060330\nBacktrace: 0x{pc:08x}:0x3ffb5c30\n".encode()
        + b"\nRebooting...\n"
        + b"I (20) boot: again\n" * 40
    )
    capture = capture_from_raw(log, tmp_path / "crash.jsonl", chunk_lines=2)
    loaded = open_page(capture, elf=str(tmp_path / "app.elf"))
    marks = loaded.js("serialView.data.timeline.markers")
    k = next(i for i, m in enumerate(marks) if m[1] == "crash")
    assert marks[k][3] == lines and "crash_here at " in lines[0]
    canvas = loaded.page.locator("#timeline")
    box = canvas.bounding_box()
    state = loaded.js("({ t0: serialView.state.t0, t1: serialView.state.t1 })")
    x = (marks[k][0] - state["t0"]) / (state["t1"] - state["t0"]) * box["width"]
    loaded.page.mouse.move(box["x"] + x, box["y"] + 15)
    tip = loaded.page.locator("#tl-tip")
    assert tip.is_visible() and tip.inner_text().splitlines()[-len(lines) :] == lines
    assert loaded.problems == []
