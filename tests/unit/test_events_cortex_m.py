"""Issue 38.2: the Cortex-M fault reports of Zephyr (3.x minimal and full log, 1.x printk), nRF Connect SDK,
CmBacktrace, Mbed OS and FreeRTOS's configASSERT, found at the right offset with their PC and caller, and
decoded against the firmware's ELF into the text line's chain (``function at file:line ← caller ← …``).

Data: tests/data/crashes/cortex-m-qemu.json, what tests/firmware/cortex_m/fault-demo.elf printed under
qemu-system-arm (a real HardFault handler reading the real stacked frame); the same ELF decodes it. The live run
is tests/firmware/test_cortex_m_faults.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from serial_mcp.core.events import SIGNATURES, Event, EventDetector
from serial_mcp.serial.event_text import SeenEvent, where_suffix
from serial_mcp.serial.firmware_elf import LoadedElf, load_local_elf

ROOT = Path(__file__).resolve().parents[2]
ELF = ROOT / "tests" / "firmware" / "cortex_m" / "fault-demo.elf"
REPORTS = {
    b["mode"]: b["text"].encode()
    for b in json.loads((ROOT / "tests/data/crashes/cortex-m-qemu.json").read_text())["blocks"]
}

# what the committed ELF says (binutils' arm-none-eabi-addr2line agrees: test_addr2line_agrees)
SENSOR_STORE = "sensor_store at app.c:13"  # the NULL write
APP_TASK = "app_task at app.c:19"  # its call: the line of the BL, not the one after it (app.c:20)
PARSE_FRAME = "parse_frame at app.c:26"  # the undefined instruction
RADIO_TASK = "radio_task at app.c:33"


def run(data: bytes, chunk: int = 0) -> list[Event]:
    detector = EventDetector()
    if not chunk:
        return detector.feed(data, 0, 0.0) + detector.flush()
    out: list[Event] = []
    for i in range(0, len(data), chunk):
        out += detector.feed(data[i : i + chunk], i, 0.0)
    return out + detector.flush()


def line_at(data: bytes, needle: bytes) -> int:
    pos = data.index(needle)
    return max(data.rfind(b"\n", 0, pos), data.rfind(b"\r", 0, pos)) + 1


def line_end(data: bytes, needle: bytes) -> int:
    pos = data.index(needle)
    return min(i for i in (data.find(b"\n", pos), data.find(b"\r", pos)) if i >= 0)


def hex_after(data: bytes, needle: bytes) -> int:
    rest = data[data.index(needle) + len(needle) :]
    return int(rest.split()[0], 16)


def crash(events: list[Event]) -> Event:
    (found,) = [e for e in events if e.kind == "crash"]
    return found


@pytest.fixture(scope="module")
def elf() -> LoadedElf:
    return load_local_elf(str(ELF))


def chain(elf: LoadedElf, event: Event) -> str:
    return where_suffix(elf.decode_event(event))


# --- found, where, with what ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "head", "reason"),
    [
        ("z", b"E: ***** HARD FAULT *****", "HARD FAULT"),
        ("m", b"[00:00:00.", "MPU FAULT"),
        ("n", b"E: ***** HARD FAULT *****", "HARD FAULT"),
    ],
)
def test_a_zephyr_fault_is_one_crash_at_its_first_line_with_pc_and_lr(
    mode: str, head: bytes, reason: str
) -> None:
    data = REPORTS[mode]
    found = crash(run(data))
    assert (found.family, found.signature, found.severity) == ("zephyr", "zephyr_fault", "critical")
    assert found.offset == line_at(data, head) and found.reason == reason
    assert found.pc == hex_after(data, b"Faulting instruction address (r15/pc): ")
    assert int(found.detail["lr"], 16) == hex_after(data, b"r14/lr:")
    assert found.detail["thread"] == "0x20000004 (main)"


def test_a_zephyr_1x_printk_fault_gives_its_pc_and_ends_at_fatal_fault() -> None:
    data = REPORTS["o"]
    found = crash(run(data))
    assert found.offset == line_at(data, b"***** MPU FAULT *****") and found.reason == "MPU FAULT"
    assert found.pc == hex_after(data, b"Faulting instruction address = ")
    assert found.end == line_end(data, b"Fatal fault in thread")


def test_nrf_connect_sdk_resetting_system_is_a_reset_after_the_crash() -> None:
    data = REPORTS["n"]
    events = run(data)
    (reset,) = [e for e in events if e.kind == "reset"]
    assert (reset.signature, reset.offset, reset.reason) == (
        "zephyr_resetting",
        line_at(data, b"E: Resetting system"),
        "fatal error",
    )
    assert crash(events).end <= reset.offset
    assert data.count(b"fault-demo ready") == 2  # the reset was real: the firmware started again


@pytest.mark.parametrize(
    "line", [b"[00:00:00.003,000] <err> fatal_error: Resetting system\r\n", b"E: Resetting system\r\n"]
)
def test_resetting_system_in_either_log_format_is_a_reset_and_prose_is_not(line: bytes) -> None:
    assert [(e.kind, e.offset) for e in run(b"boot\r\n" + line)] == [("reset", 6)]
    assert run(b"note: Resetting system clock is a user command here\r\n") == []


def test_a_cmbacktrace_fault_has_its_registers_reason_and_whole_call_stack() -> None:
    data = REPORTS["c"]
    found = crash(run(data))
    assert (found.family, found.signature) == ("cmbacktrace", "cmb_fault")
    assert found.offset == line_at(data, b"Fault on interrupt or bare metal(no OS) environment")
    assert found.reason == "Memory management fault is caused by data access violation"
    assert found.pc == hex_after(data, b"PC : ") and found.detail["lr"] == f"{hex_after(data, b'LR : '):08x}"
    listed = data[data.index(b"-afpiC ") + 7 :].split(b"\r")[0].split()
    assert found.detail["calls"] == " ".join(a.decode() for a in listed) and len(listed) == 4
    assert found.detail["fault_address"] == "00000000" and found.detail["elf_file"] == "fault-demo.elf"
    assert found.end == line_end(data, b"Show more call stack info")  # the stack dump between is not counted


def test_the_older_cmbacktrace_addr2line_hint_a_f_gives_the_call_stack_too() -> None:
    # cmb_en_US.h before armink/CmBacktrace@4abadfa (2023): "addr2line -e %s%s -a -f %.*s"
    data = REPORTS["c"].replace(b"-afpiC", b"-a -f")
    assert crash(run(data)).detail["calls"].split()[0] == f"{hex_after(data, b'PC : '):08x}"


def test_a_mbed_os_fault_is_one_crash_from_the_fault_handler_to_the_error_report() -> None:
    data = REPORTS["b"]
    found = crash(run(data))
    assert (found.family, found.signature, found.reason) == ("mbed-os", "mbed_fault", "HardFault")
    assert found.offset == line_at(data, b"++ MbedOS Fault Handler ++")
    assert found.end == line_end(data, b"-- MbedOS Error Info --")
    assert found.pc == hex_after(data, b"PC   : ") and int(found.detail["lr"], 16) == hex_after(
        data, b"LR   : "
    )
    assert (found.detail["fault_register"], found.detail["fault_address"]) == ("MMFAR", "00000000")


def test_a_mbed_os_error_report_alone_is_a_crash_with_its_message_and_caller(elf: LoadedElf) -> None:
    data = REPORTS["b"]
    report = data[data.index(b"++ MbedOS Error Info ++") :]
    found = crash(run(report))
    assert (found.signature, found.offset, found.reason) == ("mbed_error", 0, "Fault exception")
    assert found.detail["caller"] == data.split(b"Location: ")[1].split(b"\r")[0].decode()
    assert found.end == line_end(report, b"-- MbedOS Error Info --")
    ((_, frames),) = elf.decode_event(found)  # Location: the return address of the mbed_error() call
    assert frames[0].startswith("mbed_report at fault_demo.c:")


def test_a_freertos_assert_is_a_crash_naming_file_and_line_without_a_pc() -> None:
    data = REPORTS["a"]
    found = crash(run(data))
    assert (found.family, found.signature, found.offset) == (
        "freertos",
        "freertos_assert",
        line_at(data, b"ASSERT!"),
    )
    assert (found.detail["file"], found.detail["line"], found.pc) == ("app.c", "39", None)
    assert "ASSERT! Line 39, file app.c" in SeenEvent(1, found).text_line()


@pytest.mark.parametrize("mode", sorted(REPORTS))
def test_chunking_does_not_change_what_is_found(mode: str) -> None:
    whole = [e.as_dict() for e in run(REPORTS[mode])]
    assert whole and [e.as_dict() for e in run(REPORTS[mode], chunk=7)] == whole


# --- decoded: the PC, then the callers, in the text line ------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("z", f" — {SENSOR_STORE} ← {APP_TASK}"),
        ("m", f" — {SENSOR_STORE} ← {APP_TASK}"),
        ("o", f" — {SENSOR_STORE}"),  # Zephyr 1.x printed no LR
        ("n", f" — {PARSE_FRAME} ← {RADIO_TASK}"),
        ("b", f" — {SENSOR_STORE} ← {APP_TASK}"),
        ("a", ""),  # no address: the line itself says file and line
    ],
)
def test_the_text_line_names_the_faulting_function_and_its_caller(
    elf: LoadedElf, mode: str, expected: str
) -> None:
    found = crash(run(REPORTS[mode]))
    assert chain(elf, found) == expected
    assert SeenEvent(1, found, elf.decode_event(found)).text_line().endswith(expected)


def test_cmbacktrace_call_stack_is_decoded_up_to_three_frames_then_counted(elf: LoadedElf) -> None:
    found = crash(run(REPORTS["c"]))
    frames = elf.decode_event(found)
    # the PC, the LR (and CmBacktrace's LR-1 in its list: the same call, once), main, the reset handler
    assert [a for a, _ in frames] == [
        found.pc,
        int(found.detail["lr"], 16),
        *[int(a, 16) for a in found.detail["calls"].split()[2:]],
    ]
    assert frames[2][1][0].startswith("main at fault_demo.c:") and frames[3][1][0].startswith(
        "reset_handler at "
    )
    assert chain(elf, found) == f" — {SENSOR_STORE} ← {APP_TASK} ← {frames[2][1][0]} ← … and 1 more"


def test_a_return_address_is_looked_up_one_byte_back_and_keyed_as_printed(elf: LoadedElf) -> None:
    found = crash(run(REPORTS["z"]))
    lr = int(found.detail["lr"], 16)
    assert lr & 1  # a Thumb return address as the core stacked it
    assert dict(elf.decode_event(found))[lr] == (APP_TASK,)
    assert elf.decode([lr & ~1]) == ((lr & ~1, ("app_task at app.c:20",)),)  # the return point: the next line


def test_addr2line_agrees(elf: LoadedElf) -> None:
    tool = shutil.which("arm-none-eabi-addr2line")
    if tool is None:
        pytest.skip("SKIPPED LOUDLY: arm-none-eabi-addr2line (binutils-arm-none-eabi) is not installed")
    found = crash(run(REPORTS["z"]))
    lr = int(found.detail["lr"], 16)
    assert found.pc is not None
    out = subprocess.run(
        [tool, "-f", "-e", str(ELF), hex(found.pc), hex((lr & ~1) - 1)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert [f"{out[0]} at {out[1]}", f"{out[2]} at {out[3]}"] == [SENSOR_STORE, APP_TASK]


def test_esp_idf_riscv_ra_is_kept_as_the_caller() -> None:
    data = (ROOT / "tests/data/crashes/esp32c3-panics.txt").read_bytes()
    found = next(e for e in run(data) if e.kind == "crash")
    assert found.detail["ra"] == data.split(b"RA      : ")[1].split()[0].decode()


def test_the_trigger_literals_still_fit_the_fast_prefilter() -> None:
    # ahocorasick_rs's SIMD "Teddy" search serves up to 64 literals (docs/events.md): past that every byte
    # received costs ~6x more (bench/bench_events.py, noise). New families share literals where they can.
    assert len({t for sig in SIGNATURES for t in sig.triggers}) <= 64
