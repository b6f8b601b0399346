"""The crash/boot event detector (serial_mcp.core.events) against real console output.

Data: tests/data/bootlogs (OpenWrt and an ESP32 whose second boot is a watchdog reset), tests/data/crashes (real
ESP32 panics, QEMU captures of a Linux panic and a U-Boot abort, the MicroPython unix port, syzkaller's Linux
reports, and the console examples of the ESP-IDF and Zephyr documentation) and tests/data/nmea plus
tests/data/gnss as noise. Offsets are checked against the bytes themselves; chunking must not matter.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from serial_mcp.core.events import MAX_FRAMES, MAX_LINE, SIGNATURES, Event, EventDetector
from serial_mcp.errors import InvalidArgument

DATA = Path(__file__).resolve().parents[1] / "data"
CRASHES = DATA / "crashes"
SHARED_GNSS = Path(__file__).resolve().parents[1] / "data" / "gnss"


def run(data: bytes, t: float = 0.0, **kw: object) -> list[Event]:
    detector = EventDetector(**kw)  # type: ignore[arg-type]
    return detector.feed(data, 0, t) + detector.flush()


def line_at(data: bytes, needle: bytes, nth: int = 0) -> int:
    """Offset of the first byte of the line holding the ``nth`` occurrence of ``needle``."""
    pos = -1
    for _ in range(nth + 1):
        pos = data.index(needle, pos + 1)
    return max(data.rfind(b"\n", 0, pos), data.rfind(b"\r", 0, pos)) + 1


def line_end(data: bytes, needle: bytes, nth: int = 0) -> int:
    pos = -1
    for _ in range(nth + 1):
        pos = data.index(needle, pos + 1)
    return min(i for i in (data.find(b"\n", pos), data.find(b"\r", pos), len(data)) if i >= 0)


def kinds(events: list[Event]) -> list[tuple[str, str]]:
    return [(e.kind, e.signature) for e in events]


def blocks(name: str) -> list[tuple[str, bytes]]:
    doc = json.loads((CRASHES / name).read_text())
    return [(b["from"], b["text"].encode()) for b in doc["blocks"]]


# --- boots in real boot logs -------------------------------------------------------------------------------


def test_esp32_log_gives_its_two_boots_the_second_a_watchdog_reset() -> None:
    data = (DATA / "bootlogs/esp32/esp32-mdf-boot.txt").read_bytes()
    events = run(data)
    boots = [e for e in events if e.kind == "boot"]
    assert [(b.offset, b.reason) for b in boots] == [
        (line_at(data, b"ets Jun"), "POWERON_RESET"),
        (line_at(data, b"ets Jun", 1), "RTCWDT_RTC_RESET"),
    ]
    assert boots[1].detail["rst_code"] == "0x10" and boots[1].end == line_end(data, b"rst:0x10")
    assert [e.kind for e in events if e.kind not in ("boot", "stage")] == []  # no crash, no loop
    assert [e.offset for e in events if e.kind == "stage"] == [line_at(data, b"Pro cpu start user code")]


@pytest.mark.parametrize(
    ("path", "boot", "stages"),
    [
        ("openwrt-COVR-X1860/Bootlog.txt", b"U-Boot SPL ELX", [b"Linux version"]),
        ("openwrt-M32/Bootlog.txt", b"U-Boot 2014.04", [b"Booting Linux on", b"Linux version"]),
        ("openwrt-MR6350/BootLog_no_MACs.txt", b"U-Boot 2012.07", [b"Booting Linux on", b"Linux version"]),
    ],
)
def test_openwrt_boot_chain_is_one_boot_and_its_stages_no_crash(
    path: str, boot: bytes, stages: list[bytes]
) -> None:
    data = (DATA / "bootlogs" / path).read_bytes()
    events = run(data)
    assert [(e.kind, e.offset) for e in events] == [("boot", line_at(data, boot))] + [
        ("stage", line_at(data, s)) for s in stages
    ]


def test_no_event_in_nmea_and_binary_gnss_noise() -> None:
    paths = sorted((DATA / "nmea").iterdir()) + (
        sorted(SHARED_GNSS.iterdir()) if SHARED_GNSS.is_dir() else []
    )
    assert len(paths) >= 12
    for path in paths:
        assert run(path.read_bytes()) == [], path.name


# --- crashes: ESP-IDF ---------------------------------------------------------------------------------------


def test_esp32c3_abort_and_illegal_instruction_each_with_its_reset_then_a_boot_loop() -> None:
    data = (CRASHES / "esp32c3-panics.txt").read_bytes()
    events = run(data)
    assert kinds(events) == [
        ("boot", "esp_rom"),
        ("crash", "esp_abort"),
        ("boot", "esp_rom"),
        ("crash", "esp_guru"),
        ("boot", "esp_rom"),
        ("boot_loop", "boot_loop"),
    ]
    boot1, abort, boot2, guru, boot3, loop = events
    rom = [line_at(data, b"ESP-ROM:", n) for n in range(3)]
    assert (boot1.offset, boot2.offset, boot3.offset) == tuple(rom)
    assert abort.offset == line_at(data, b"abort() was called") and abort.pc == 0x42003863
    assert abort.end == line_end(data, b"Rebooting...") and abort.detail["core"] == "0"
    assert (abort.reset_offset, abort.reset_reason) == (rom[1], "RTC_SW_CPU_RST")
    assert boot2.crash_offset == abort.offset and boot2.reason == "RTC_SW_CPU_RST"
    assert guru.reason == "Illegal instruction" and guru.pc == 0x420037CE  # MEPC: RISC-V prints no Backtrace
    assert guru.detail["mcause"] == "0x00000002" and guru.backtrace == ()
    assert (guru.reset_offset, boot3.crash_offset) == (rom[2], guru.offset)
    assert loop.boots == tuple(rom) and loop.offset == rom[0] and loop.severity == "critical"


def test_esp32_guru_meditation_with_backtrace_across_a_core_dump() -> None:
    data = (CRASHES / "esp32-coredump.txt").read_bytes()
    events = run(data)
    assert kinds(events) == [("boot", "esp_app"), ("crash", "esp_guru"), ("boot", "esp_rom_ets")]
    crash = events[1]
    assert crash.offset == line_at(data, b"Guru Meditation Error") and crash.reason == "StoreProhibited"
    assert crash.pc == 0x400E37F7 and crash.backtrace == (0x400E37F4, 0x400D0C2E, 0x40087015)
    assert crash.detail["exccause"] == "0x0000001d" and crash.detail["excvaddr"] == "0x00000001"
    assert crash.end == line_end(data, b"Rebooting...")  # the ~290 core-dump lines did not end the block
    assert (crash.reset_offset, crash.reset_reason) == (line_at(data, b"ets Jun"), "SW_CPU_RESET")


def test_esp_idf_documentation_examples() -> None:
    got = {name: run(text) for name, text in blocks("esp-idf-fatal-errors.json")}
    assert len(got) == 8 and all(len(ev) == 1 and ev[0].kind == "crash" for ev in got.values())
    one = {name: ev[0] for name, ev in got.items()}
    assert one["Panic Handler (Xtensa)"].reason == "IllegalInstruction"
    dump = one["Register Dump and Backtrace (Xtensa)"]
    assert (dump.signature, dump.severity, dump.backtrace) == (
        "esp_backtrace",
        "warning",
        (0x400E14ED, 0x400D0802),
    )
    assert one["Brownout"].reason == "brownout" and one["Brownout"].severity == "critical"
    heap = one["Corrupt Heap"]
    assert (heap.reason or "").startswith("CORRUPT HEAP: Bad tail at 0x3ffe270a") and heap.pc == 0x400DCA43
    assert heap.detail["esp_assertion"].startswith('assertion "head != NULL" failed')
    smash = one["Stack Smashing"]
    assert smash.pc == 0x400D2138 and len(smash.backtrace) == 12 and smash.backtrace[-1] == 0x400D2C44
    assert one["UBSAN Output"].reason == "out_of_bounds" and len(one["UBSAN Output"].backtrace) == 6
    assert one["FreeRTOS End of Stack Watchpoint (RISC-V)"].reason == "Breakpoint"
    assert one["Hardware Stack Guard"].reason == "Stack protection fault"


def test_esp_idf_task_watchdog_example() -> None:
    ((_, text),) = blocks("esp-idf-task-watchdog.json")
    (crash,) = run(text)
    assert (crash.signature, crash.severity, crash.reason) == ("esp_task_wdt", "error", "task watchdog")
    assert crash.offset == line_at(text, b"Task watchdog got triggered")
    assert crash.detail["tasks"] == "reset task (CPU 0)" and crash.detail["running"] == "IDLE"
    assert crash.end == line_end(text, b"Print CPU 0")


# --- crashes: Linux, U-Boot, Zephyr, MicroPython ------------------------------------------------------------


def test_linux_sysrq_panic_in_qemu_with_call_trace_and_the_reboot() -> None:
    data = (CRASHES / "linux-sysrq-panic.txt").read_bytes()
    events = run(data)
    assert kinds(events) == [
        ("boot", "seabios"),
        ("stage", "linux_version"),
        ("crash", "linux_panic"),
        ("boot", "seabios"),
        ("stage", "linux_version"),
    ]
    crash = events[2]
    assert (
        crash.offset == line_at(data, b"Kernel panic - not syncing")
        and crash.reason == "sysrq triggered crash"
    )
    assert "sysrq_handle_crash+0x16/0x20" in crash.trace and crash.trace[0] == "dump_stack_lvl+0x44/0x5c"
    assert crash.detail["comm"] == "sh" and crash.pc == 0x47B7A0  # RIP: 0033:0x47b7a0 (the shell's write)
    second = line_at(data, b"SeaBIOS", 1)
    assert (crash.reset_offset, events[3].offset, events[3].crash_offset) == (second, second, crash.offset)


SYZKALLER = [  # report, the crash line it must begin with (its TITLE's kind), severity (PANICKED: Y → critical)
    ("112", "BUG: unable to handle kernel NULL pointer dereference", "critical"),
    ("139", "BUG: unable to handle kernel paging request", "critical"),
    ("65", "watchdog: BUG: soft lockup", "critical"),
    ("140", "WARNING: CPU: 0 PID: 5944 at", "critical"),
    ("130", "BUG: KASAN: use-after-free", "error"),
    ("148", "general protection fault", "error"),
    ("44", "kernel BUG at", "error"),
    ("548", "Unhandled fault: page domain fault", "error"),
]


@pytest.mark.parametrize(("name", "kind", "severity"), SYZKALLER)
def test_syzkaller_linux_reports_one_crash_each(name: str, kind: str, severity: str) -> None:
    header, _, body = (CRASHES / "syzkaller" / name).read_bytes().partition(b"\n\n")
    assert (b"PANICKED: Y" in header) == (severity == "critical")  # the report's own verdict
    crashes = [e for e in run(body) if e.kind == "crash"]
    assert len(crashes) == 1, crashes  # the Oops, its call trace and the panic that follows are one event
    crash = crashes[0]
    assert re.sub(r"^(\[[^\]]*\])+ ", "", crash.line).startswith(kind) and crash.severity == severity
    assert crash.offset == line_at(body, kind.encode())


def test_uboot_synchronous_abort_in_qemu_and_its_reset() -> None:
    data = (CRASHES / "uboot-synchronous-abort.txt").read_bytes()
    events = run(data)
    assert kinds(events) == [("boot", "uboot"), ("crash", "uboot_abort"), ("boot", "uboot")]
    crash = events[1]
    assert crash.offset == line_at(data, b'"Synchronous Abort"') and crash.reason == "Synchronous Abort"
    assert (
        crash.pc == 0x81104
        and crash.detail["esr"] == "0x96000010"
        and crash.detail["lr"] == "0000000000081054"
    )
    assert crash.end == line_end(data, b"resetting ...") and crash.reset_offset == line_at(
        data, b"U-Boot 2023", 1
    )


def test_zephyr_mpu_test_faults() -> None:
    expected = [
        ("BUS FAULT", 0x3C8),
        ("MPU FAULT", 0x3B2),
        ("MPU FAULT", 0x20000000),
        ("HARD FAULT", 0x08000486),
        ("HARD FAULT", 0x0800046A),
    ]
    got = []
    for _, text in blocks("zephyr-mpu-test.json"):
        (crash,) = run(text)
        assert crash.offset == line_at(text, b"***** ") and crash.end == line_end(text, b"Halting system")
        assert crash.detail["fatal_error"] == "0: CPU exception" and crash.detail["thread"].endswith(
            "(shell_uart)"
        )
        got.append((crash.reason, crash.pc))
    assert got == expected


def test_micropython_unix_port_tracebacks() -> None:
    """Typed at the REPL, each traceback is followed by the ``>>>`` prompt: the program went on, so each
    is an ``exception`` (issue 38), not a crash."""
    data = (CRASHES / "micropython-unix-tracebacks.txt").read_bytes()
    events = run(data)
    assert kinds(events) == [("boot", "mpy_banner")] + [("exception", "mpy_traceback")] * 3
    assert events[0].detail["version"] == "9458e3a23f" and events[0].detail["board"].startswith("linux")
    div, imp, kbd = events[1:]
    assert (div.reason, div.severity) == ("ZeroDivisionError: divide by zero", "info")
    assert div.trace == ('File "<stdin>", line 1, in <module>', 'File "<stdin>", line 2, in f')
    assert div.offset == line_at(data, b"Traceback") and div.end == line_end(data, b"ZeroDivisionError")
    assert div.summary() == (  # the exception is the traceback's last line: the summary line names it
        f"exception at offset {div.offset}: Traceback (most recent call last): ZeroDivisionError: divide by zero"
    )
    assert div.location() == "f at <stdin>:2"
    assert imp.reason == "ImportError: no module named 'nosuchmodule'"
    assert kbd.severity == "info"


# --- framing: chunks, line ends, gaps ----------------------------------------------------------------------

STREAMS = [*sorted(CRASHES.glob("*.txt")), DATA / "bootlogs/esp32/esp32-mdf-boot.txt"]


def long_lines() -> bytes:
    """The ESP32-C3 panics with every other line lengthened past MAX_LINE by NMEA noise glued to its end or
    its start: triggers inside, straddling and past the kept part of a line, whatever the chunking."""
    noise = (DATA / "nmea/quectel-l76k-nmea.log").read_bytes().replace(b"\n", b" ").replace(b"\r", b" ")
    lines = (CRASHES / "esp32c3-panics.txt").read_bytes().split(b"\n")
    pad = [noise[k * 997 : k * 997 + MAX_LINE - 40 + k % 80] for k in range(len(lines))]
    return b"\n".join(
        ln + pad[k] if k % 4 == 1 else pad[k] + ln if k % 4 == 3 else ln for k, ln in enumerate(lines)
    )


@pytest.mark.parametrize("path", [*STREAMS, None], ids=lambda p: p.name if p else "long-lines")
@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(min_value=1, max_value=5000), min_size=1, max_size=40))
@pytest.mark.slow  # over a second: the full suite runs it, the fast lane does not
def test_any_chunking_gives_the_same_events(path: Path | None, sizes: list[int]) -> None:
    data = path.read_bytes() if path is not None else long_lines()
    whole = EventDetector()
    expected = whole.feed(data, 0, 0.0) + whole.flush()
    detector, got, i, k = EventDetector(), [], 0, 0
    while i < len(data):
        n = sizes[k % len(sizes)]
        got += detector.feed(data[i : i + n], i, 0.0)
        i, k = i + n, k + 1
    got += detector.flush()
    assert got == expected
    assert detector.counters()["lines_examined"] == whole.counters()["lines_examined"]


def test_line_end_variants_do_not_matter() -> None:
    lf = (CRASHES / "linux-sysrq-panic.txt").read_bytes().replace(b"\r\n", b"\n")
    reference = run(lf)
    assert run(lf.replace(b"\n", b"\r")) == reference  # CR only: same length, so the same offsets
    crlf = (CRASHES / "uboot-synchronous-abort.txt").read_bytes()
    assert run(crlf.replace(b"\r", b"\n")) == run(crlf)


def test_a_gap_drops_the_unfinished_line_and_an_overlap_is_not_read_twice() -> None:
    data = (CRASHES / "uboot-synchronous-abort.txt").read_bytes()
    head = data.index(b"Synchronous") + 5
    detector = EventDetector()
    events = detector.feed(data[:head], 0, 0.0)
    events += detector.feed(data[head + 10 :], head + 10, 0.0)  # ten bytes lost inside the abort's first line
    events += detector.feed(data[head + 10 : head + 500], head + 10, 0.0)  # fed again: skipped
    events += detector.flush()
    assert [e.kind for e in events] == [
        "boot",
        "reset",
        "boot",
    ]  # the abort's head was lost; its reset is seen
    assert events[2].crash_offset is None
    assert detector.counters()["gaps"] == 1 and detector.counters()["overlap_bytes"] == 490


# --- the boot-loop policy and time ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("times", "window", "looped"),
    [((0, 10, 20), 30.0, True), ((0, 20, 40), 30.0, False), ((0, 20, 40), 45.0, True)],
)
def test_boot_loop_needs_n_boots_within_the_window(
    times: tuple[int, ...], window: float, looped: bool
) -> None:
    data = (CRASHES / "esp32c3-panics.txt").read_bytes()
    cuts = [line_at(data, b"ESP-ROM:", n) for n in range(3)] + [len(data)]
    detector = EventDetector(boot_loop_window=window, reset_grace=5.0, idle=5.0)
    events: list[Event] = []
    for t, lo, hi in zip(times, cuts, cuts[1:], strict=False):
        events += detector.feed(data[lo:hi], lo, float(t))
    events += detector.flush()
    assert [e.kind for e in events].count("boot") == 3
    assert ("boot_loop" in [e.kind for e in events]) is looped


def test_a_halted_crash_is_reported_by_poll_once_its_reset_grace_is_over() -> None:
    ((_, text),) = blocks("zephyr-mpu-test.json")[:1]
    detector = EventDetector(reset_grace=2.0)
    assert detector.feed(text, 0, 100.0) == []  # "Halting system": waiting for a reset that never comes
    assert detector.deadline() == 102.0 and detector.poll(101.9) == []
    (crash,) = detector.poll(102.0)
    assert crash.reason == "BUS FAULT" and crash.reset_offset is None and detector.deadline() is None


def test_a_dump_cut_short_is_closed_by_idle_time() -> None:
    data = (CRASHES / "esp32-coredump.txt").read_bytes()
    cut = data.index(b"Backtrace:")  # the board stops mid-dump: no Backtrace, no Rebooting...
    detector = EventDetector(idle=1.0, reset_grace=2.0)
    assert [e.kind for e in detector.feed(data[:cut], 0, 0.0)] == ["boot"]
    assert (
        detector.poll(1.0) == [] and detector.deadline() == 2.0
    )  # closed; its reset grace runs from its last line
    (crash,) = detector.poll(2.0)
    assert crash.reason == "StoreProhibited" and crash.pc == 0x400E37F7 and crash.backtrace == ()


def test_a_users_boot_pattern_is_a_boot_and_a_bad_one_is_refused() -> None:
    ((_, text),) = blocks("esp-idf-task-watchdog.json")
    events = run(text, boot_patterns=[rb"Initialize TWDT$"])
    assert [(e.kind, e.family, e.offset) for e in events] == [
        ("boot", "user", line_at(text, b"Initialize TWDT")),
        ("crash", "esp-idf", line_at(text, b"task_wdt: Task watchdog")),
    ]
    with pytest.raises(InvalidArgument):
        EventDetector(boot_patterns=[b"x" * 5000])  # over compile_re2's size budget on its own
    with pytest.raises(InvalidArgument) as info:  # each fits, but not with the built-in triggers beside them
        EventDetector(boot_patterns=[b"ready " + b"%04d" % i * 100 for i in range(8)])
    assert "boot_patterns" in str(info.value) and info.value.details["field"] == "boot_patterns"


# --- bounded work --------------------------------------------------------------------------------------------

EIGHT_MIB = 8 << 20


def _feed_all(data: bytes, chunk: int = 65536) -> tuple[EventDetector, list[Event], int]:
    detector, events, most = EventDetector(), [], 0
    for i in range(0, len(data), chunk):
        events += detector.feed(data[i : i + chunk], i, 0.0)
        most = max(most, detector.counters()["buffered_bytes"])
    events += detector.flush()
    return detector, events, most


def test_eight_mib_of_noise_is_scanned_once_and_no_line_is_examined() -> None:
    noise = b"".join(p.read_bytes() for p in sorted((DATA / "nmea").glob("*.log")))
    data = (noise * (EIGHT_MIB // len(noise) + 1))[:EIGHT_MIB]
    detector, events, most = _feed_all(data)
    c = detector.counters()
    assert events == [] and c["bytes_scanned"] == EIGHT_MIB and c["lines_examined"] == 0 and most <= MAX_LINE


@pytest.mark.slow  # over a second: the full suite runs it, the fast lane does not
def test_eight_mib_of_trigger_lines_examines_each_line_once_with_bounded_events() -> None:
    lines = [
        ln
        for p in sorted(CRASHES.glob("*.txt"))
        for ln in p.read_bytes().splitlines(keepends=True)
        if any(t in ln for sig in SIGNATURES for t in sig.triggers)
    ]
    unit = b"".join(lines)
    data = (unit * (EIGHT_MIB // len(unit) + 1))[:EIGHT_MIB]
    detector, events, most = _feed_all(data)
    c = detector.counters()
    nonempty = sum(1 for ln in re.split(rb"[\r\n]", data) if ln)
    assert c["lines_examined"] <= nonempty and c["bytes_examined"] <= c["bytes_scanned"] == EIGHT_MIB
    assert c["lines_examined"] > nonempty // 2 and most <= MAX_LINE  # it did look at the lines
    assert len(events) <= nonempty and all(len(e.backtrace) <= MAX_FRAMES >= len(e.trace) for e in events)


def test_a_line_without_end_is_held_to_max_line_bytes_and_read_once() -> None:
    data = b"abort() was called at PC 0x400d1234 on core 0 " + b"Oops: " * (2 << 20)  # 12 MiB, no line end
    detector, events, most = _feed_all(data, chunk=4096)
    assert most == MAX_LINE and detector.counters()["lines_examined"] == 1
    assert [(e.signature, e.pc, e.end - e.offset) for e in events] == [("esp_abort", 0x400D1234, MAX_LINE)]


# --- the table itself ----------------------------------------------------------------------------------------


def test_every_signature_pattern_is_linear_time_regex_and_every_reference_exists() -> None:
    names = [sig.name for sig in SIGNATURES]
    assert len(set(names)) == len(names)
    options = re2.Options()
    options.log_errors = False
    for sig in SIGNATURES:
        assert sig.triggers, sig.name
        patterns = [sig.head, *sig.rules, sig.end, sig.cont, sig.mild, *(sig.quiet or ())]
        for pattern in filter(None, patterns):
            re2.compile(
                pattern, options
            )  # RE2 has no backreferences or lookaround: no catastrophic backtracking
        assert set(sig.merges) | set(sig.merges_after) <= set(names), sig.name
        assert (sig.rank is not None) == (sig.kind == "boot"), sig.name


def test_event_summary_and_dict() -> None:
    data = (CRASHES / "esp32c3-panics.txt").read_bytes()
    crash = run(data)[1]
    assert crash.summary() == (
        f"crash at offset {crash.offset}: abort() was called at PC 0x42003863 on core 0 → reset RTC_SW_CPU_RST"
    )
    d = crash.as_dict()
    assert d["pc"] == "0x42003863" and d["reset_reason"] == "RTC_SW_CPU_RST" and "backtrace" not in d
    json.dumps(d)


# --- the prefilter's hints -----------------------------------------------------------------------------------

NEVER = rb"\x00never a boot\x00"  # a user's boot pattern no line holds: every line is searched on its own


@pytest.mark.parametrize("path", [*STREAMS, None], ids=lambda p: p.name if p else "long-lines")
@settings(max_examples=10, deadline=None)
@given(sizes=st.lists(st.integers(min_value=1, max_value=5000), min_size=1, max_size=40))
@pytest.mark.slow  # over a second: the full suite runs it, the fast lane does not
def test_the_prefilters_hints_find_what_searching_each_line_finds(
    path: Path | None, sizes: list[int]
) -> None:
    """A line's trigger taken from the region's search (and a line known to hold none) gives the events that
    searching each line again gives, at every chunking."""
    data = path.read_bytes() if path is not None else long_lines()
    hinted, searched = EventDetector(), EventDetector(boot_patterns=[NEVER])
    got: tuple[list[Event], list[Event]] = ([], [])
    i = k = 0
    while i < len(data):
        n = sizes[k % len(sizes)]
        for detector, events in zip((hinted, searched), got, strict=True):
            events += detector.feed(data[i : i + n], i, 0.0)
        i, k = i + n, k + 1
    assert got[0] + hinted.flush() == got[1] + searched.flush()
    assert hinted.counters() == searched.counters()
